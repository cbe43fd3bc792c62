"""What triggered each generation, and the health warnings people dismissed

Revision ID: 0017
Revises: 0018
Create Date: 2026-11-25 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0017'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('generations') as batch:
        batch.add_column(sa.Column('trigger', sa.String(length=16), nullable=True))
    op.create_table('dismissed_warnings',
    sa.Column('site_id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.Column('dismissed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('dismissed_by', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['site_id'], ['sites.id'], name=op.f('fk_dismissed_warnings_site_id_sites'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['dismissed_by'], ['users.id'], name=op.f('fk_dismissed_warnings_dismissed_by_users'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('site_id', 'kind', name=op.f('pk_dismissed_warnings'))
    )


def downgrade() -> None:
    op.drop_table('dismissed_warnings')
    with op.batch_alter_table('generations') as batch:
        batch.drop_column('trigger')
