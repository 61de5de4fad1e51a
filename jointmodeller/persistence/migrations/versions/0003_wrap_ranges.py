"""Attachments keep each wrap object's path point range (OpenSim's PathWrap range).

Revision ID: 0003_wrap_ranges
Revises: 0002_results
"""
import sqlalchemy as sa
from alembic import op

revision = "0003_wrap_ranges"
down_revision = "0002_results"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # JSON list of [start, end] per wrap object; "[]" (every older row) = each wraps the whole path
    op.add_column("attachments", sa.Column("wrap_ranges", sa.Text, nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("attachments") as batch:
        batch.drop_column("wrap_ranges")
