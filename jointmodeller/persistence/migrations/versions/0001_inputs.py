"""The five input sections, meshes and the feature lists.

Revision ID: 0001_inputs
Revises:
"""
import sqlalchemy as sa
from alembic import op

revision = "0001_inputs"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "project_info",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("author", sa.Text, nullable=False),
        sa.Column("units_length", sa.String(8), nullable=False),
        sa.Column("units_angle", sa.String(8), nullable=False),
        sa.Column("gravity_G", sa.Text, nullable=False),
        sa.Column("notes", sa.Text, nullable=False),
        sa.Column("created", sa.String(40), nullable=False),
        sa.Column("modified", sa.String(40), nullable=False),
    )
    op.create_table(
        "meshes",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("warnings", sa.Text, nullable=False),
        sa.Column("n_vertices", sa.Integer, nullable=False),
        sa.Column("n_faces", sa.Integer, nullable=False),
        sa.Column("vertices", sa.LargeBinary, nullable=False),
        sa.Column("faces", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "springs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("name", sa.Text, nullable=False, unique=True),
        sa.Column("model", sa.String(16), nullable=False),
        sa.Column("kx", sa.Text, nullable=False),
        sa.Column("ky", sa.Text, nullable=False),
        sa.Column("kz", sa.Text, nullable=False),
        sa.Column("cx", sa.Float, nullable=False),
        sa.Column("cy", sa.Float, nullable=False),
        sa.Column("cz", sa.Float, nullable=False),
        sa.Column("tension_only", sa.Boolean, nullable=False),
        sa.Column("slack_length_m", sa.Float, nullable=True),
        sa.Column("law", sa.String(16), nullable=False),
        sa.Column("transition_strain", sa.Float, nullable=False),
        sa.Column("colour", sa.String(16), nullable=False),
    )
    op.create_table(
        "masses",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("name", sa.Text, nullable=False, unique=True),
        sa.Column("mesh_id", sa.String(64), sa.ForeignKey("meshes.id"), nullable=True),
        sa.Column("cartilage_id", sa.String(64), sa.ForeignKey("meshes.id"), nullable=True),
        sa.Column("density_kg_m3", sa.Float, nullable=True),
        sa.Column("mass_kg", sa.Float, nullable=False),
        sa.Column("com_L", sa.Text, nullable=False),
        sa.Column("inertia_L", sa.Text, nullable=False),
        sa.Column("properties_from_mesh", sa.Boolean, nullable=False),
        sa.Column("position_G", sa.Text, nullable=False),
        sa.Column("euler_deg", sa.Text, nullable=False),
        sa.Column("euler_sequence", sa.String(8), nullable=False),
        sa.Column("fixed", sa.Boolean, nullable=False),
        sa.Column("joint", sa.Text, nullable=True),
        sa.Column("colour", sa.String(16), nullable=False),
    )
    op.create_table(
        "attachments",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("name", sa.Text, nullable=False, unique=True),
        sa.Column("spring_id", sa.Integer, sa.ForeignKey("springs.id", ondelete="RESTRICT"), nullable=False),
        sa.Column("body_a_id", sa.Integer, sa.ForeignKey("masses.id", ondelete="RESTRICT"), nullable=True),
        sa.Column("body_b_id", sa.Integer, sa.ForeignKey("masses.id", ondelete="RESTRICT"), nullable=True),
        sa.Column("point_a_L", sa.Text, nullable=False),
        sa.Column("point_b_L", sa.Text, nullable=False),
        sa.Column("initial_length_m", sa.Float, nullable=True),
        sa.Column("wraps", sa.Boolean, nullable=False),
        sa.Column("via_points", sa.Text, nullable=False),
        sa.Column("wrap_objects", sa.Text, nullable=False),
    )
    op.create_table(
        "forces",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("name", sa.Text, nullable=False, unique=True),
        sa.Column("body_id", sa.Integer, sa.ForeignKey("masses.id", ondelete="RESTRICT"), nullable=False),
        sa.Column("point_L", sa.Text, nullable=False),
        sa.Column("direction_G", sa.Text, nullable=False),
        sa.Column("magnitude_N", sa.Float, nullable=False),
        sa.Column("profile", sa.Text, nullable=False),
    )
    op.create_table(
        "feature_rows",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("section", sa.String(32), nullable=False, index=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("data", sa.Text, nullable=False),
    )


def downgrade() -> None:
    for name in ("feature_rows", "forces", "attachments", "masses", "springs", "meshes", "project_info"):
        op.drop_table(name)
