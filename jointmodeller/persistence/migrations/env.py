"""Alembic environment: runs on the connection the program hands over, or on -x project=PATH."""

from alembic import context
from sqlalchemy import create_engine

from jointmodeller.persistence.tables import Base

config = context.config
connection = config.attributes.get("connection")


def run(conn) -> None:
    context.configure(connection=conn, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if connection is not None:
    run(connection)
else:
    path = context.get_x_argument(as_dictionary=True).get("project")
    if not path:
        raise SystemExit("give the project file: alembic -c jointmodeller/persistence/migrations/alembic.ini"
                         " -x project=PATH.jmdb upgrade head")
    with create_engine(f"sqlite:///{path}").connect() as conn:
        run(conn)
