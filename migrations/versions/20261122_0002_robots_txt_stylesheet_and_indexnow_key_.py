"""robots.txt, stylesheet and IndexNow key per site; rollbacks in the history

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 03:04:05.934071
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sites", schema=None) as batch_op:
        batch_op.add_column(sa.Column("robots_txt", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("stylesheet", sa.Boolean(), server_default=sa.true(),
                                      nullable=False))
        batch_op.add_column(sa.Column("indexnow_key", sa.String(length=128), nullable=True))
        batch_op.add_column(sa.Column("storage_key", sa.String(length=32), nullable=True))
    # Every existing site gets its own keys before the columns become required.
    sites = sa.table("sites", sa.column("id", sa.Integer), sa.column("indexnow_key", sa.String),
                     sa.column("storage_key", sa.String))
    connection = op.get_bind()
    for (site_id,) in connection.execute(sa.select(sites.c.id)).all():
        connection.execute(sites.update().where(sites.c.id == site_id).values(
            indexnow_key=uuid.uuid4().hex, storage_key=uuid.uuid4().hex))
    with op.batch_alter_table("sites", schema=None) as batch_op:
        batch_op.alter_column("indexnow_key", existing_type=sa.String(length=128), nullable=False)
        batch_op.alter_column("storage_key", existing_type=sa.String(length=32), nullable=False)
        batch_op.create_unique_constraint(batch_op.f("uq_sites_storage_key"), ["storage_key"])
    with op.batch_alter_table("generations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("rollback_of", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("generations", schema=None) as batch_op:
        batch_op.drop_column("rollback_of")
    with op.batch_alter_table("sites", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("uq_sites_storage_key"), type_="unique")
        batch_op.drop_column("storage_key")
        batch_op.drop_column("indexnow_key")
        batch_op.drop_column("stylesheet")
        batch_op.drop_column("robots_txt")
