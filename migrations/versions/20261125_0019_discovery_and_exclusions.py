"""Exclusion rules of a site, its discovery mode, and the URLs a discovery crawl found

Revision ID: 0019
Revises: 0015
Create Date: 2026-11-25 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from webapp.db import UTCDateTime

revision = '0019'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('sites') as batch:
        batch.add_column(sa.Column('exclude', sa.Text(), nullable=True))
        batch.add_column(sa.Column('strip_params', sa.String(length=1000), nullable=True))
        batch.add_column(sa.Column('discover_mode', sa.String(length=8), nullable=False,
                                   server_default='review'))
    op.create_table(
        'discoveries',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('site_id', sa.Integer(), nullable=False),
        sa.Column('loc', sa.String(length=2048), nullable=False),
        sa.Column('depth', sa.Integer(), nullable=False),
        sa.Column('state', sa.String(length=12), nullable=False),
        sa.Column('verdict', sa.String(length=8), nullable=True),
        sa.Column('review', sa.String(length=8), nullable=False),
        sa.Column('note', sa.Text(), nullable=True),
        sa.Column('found_at', UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['site_id'], ['sites.id'],
                                name=op.f('fk_discoveries_site_id_sites'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_discoveries')),
        sa.UniqueConstraint('site_id', 'loc', name=op.f('uq_discoveries_site_id_loc')),
    )
    op.create_index('ix_discoveries_site_id_state_depth', 'discoveries',
                    ['site_id', 'state', 'depth'])


def downgrade() -> None:
    op.drop_index('ix_discoveries_site_id_state_depth', table_name='discoveries')
    op.drop_table('discoveries')
    with op.batch_alter_table('sites') as batch:
        batch.drop_column('discover_mode')
        batch.drop_column('strip_params')
        batch.drop_column('exclude')
