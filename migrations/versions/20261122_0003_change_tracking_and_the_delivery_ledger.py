"""Change tracking for announcements, engine settings per site, and the delivery ledger

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 04:27:11.653351
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('deliveries',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('site_id', sa.Integer(), nullable=False),
    sa.Column('engine', sa.String(length=16), nullable=False),
    sa.Column('generation_id', sa.Integer(), nullable=True),
    sa.Column('target', sa.String(length=2048), nullable=True),
    sa.Column('url_count', sa.Integer(), nullable=False),
    sa.Column('urls', sa.Text(), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('attempt_limit', sa.Integer(), nullable=False),
    sa.Column('http_status', sa.Integer(), nullable=True),
    sa.Column('outcome', sa.Text(), nullable=True),
    sa.Column('response_excerpt', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_attempt_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('claimed_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['site_id'], ['sites.id'], name=op.f('fk_deliveries_site_id_sites'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_deliveries'))
    )
    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_deliveries_site_id'), ['site_id'], unique=False)
        batch_op.create_index('ix_deliveries_status_next_attempt_at', ['status', 'next_attempt_at'], unique=False)

    op.create_table('notify_cursors',
    sa.Column('site_id', sa.Integer(), nullable=False),
    sa.Column('engine', sa.String(length=16), nullable=False),
    sa.Column('position', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['site_id'], ['sites.id'], name=op.f('fk_notify_cursors_site_id_sites'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('site_id', 'engine', name=op.f('pk_notify_cursors'))
    )
    with op.batch_alter_table('generations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('change_seq', sa.BigInteger(), nullable=True))

    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.add_column(sa.Column('change_seq', sa.BigInteger(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('indexnow_enabled', sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.add_column(sa.Column('indexnow_endpoint', sa.String(length=2048), nullable=True))
        batch_op.add_column(sa.Column('indexnow_key_location', sa.String(length=8), server_default='root', nullable=False))
        batch_op.add_column(sa.Column('gsc_property', sa.String(length=2048), nullable=True))
        batch_op.add_column(sa.Column('gsc_credentials', sa.String(length=4096), nullable=True))
        batch_op.add_column(sa.Column('gsc_endpoint', sa.String(length=2048), nullable=True))
        batch_op.add_column(sa.Column('ping_urls', sa.Text(), nullable=True))

    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.add_column(sa.Column('change_seq', sa.BigInteger(), server_default='0', nullable=False))
        batch_op.create_index('ix_urls_site_id_change_seq', ['site_id', 'change_seq'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.drop_index('ix_urls_site_id_change_seq')
        batch_op.drop_column('change_seq')

    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.drop_column('ping_urls')
        batch_op.drop_column('gsc_endpoint')
        batch_op.drop_column('gsc_credentials')
        batch_op.drop_column('gsc_property')
        batch_op.drop_column('indexnow_key_location')
        batch_op.drop_column('indexnow_endpoint')
        batch_op.drop_column('indexnow_enabled')
        batch_op.drop_column('change_seq')

    with op.batch_alter_table('generations', schema=None) as batch_op:
        batch_op.drop_column('change_seq')

    op.drop_table('notify_cursors')
    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.drop_index('ix_deliveries_status_next_attempt_at')
        batch_op.drop_index(batch_op.f('ix_deliveries_site_id'))

    op.drop_table('deliveries')
