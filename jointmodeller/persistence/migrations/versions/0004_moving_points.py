"""Attachments' end points may move with the coordinates (OpenSim's MovingPathPoint).

Revision ID: 0004_moving_points
Revises: 0003_wrap_ranges
"""
import sqlalchemy as sa
from alembic import op

revision = "0004_moving_points"
down_revision = "0003_wrap_ranges"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # JSON list of three FunctionSpecs (x, y, z in L) or "[]" (every older row) = the point is fixed;
    # a moving via point keeps its functions in via_points' own JSON (field "moving", absent = fixed)
    op.add_column("attachments", sa.Column("moving_a", sa.Text, nullable=False, server_default="[]"))
    op.add_column("attachments", sa.Column("moving_b", sa.Text, nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("attachments") as batch:
        batch.drop_column("moving_b")
        batch.drop_column("moving_a")
