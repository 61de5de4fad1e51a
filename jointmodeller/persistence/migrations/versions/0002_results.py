"""Results of studies: runs with their parameters and time-stamped series.

Revision ID: 0002_results
Revises: 0001_inputs
"""
import sqlalchemy as sa
from alembic import op

revision = "0002_results"
down_revision = "0001_inputs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study", sa.String(64), nullable=False),
        sa.Column("parameters", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("created", sa.String(40), nullable=False),
        sa.Column("labels", sa.Text, nullable=False),
        sa.Column("summary", sa.Text, nullable=False),
    )
    op.create_table(
        "run_series",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("dtype", sa.String(16), nullable=False),
        sa.Column("shape", sa.Text, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("run_series")
    op.drop_table("runs")
