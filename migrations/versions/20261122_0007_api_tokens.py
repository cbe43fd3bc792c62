"""API tokens

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22 07:20:40.963317
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Tokens of the JSON API (only a digest of each secret), and the sites each may act on.
    op.create_table('api_tokens',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('prefix', sa.String(length=16), nullable=False),
    sa.Column('secret_hash', sa.String(length=64), nullable=False),
    sa.Column('scope', sa.String(length=8), nullable=False),
    sa.Column('all_sites', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('window_start', sa.DateTime(timezone=True), nullable=True),
    sa.Column('window_count', sa.Integer(), server_default='0', nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_api_tokens_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_tokens')),
    sa.UniqueConstraint('secret_hash', name=op.f('uq_api_tokens_secret_hash'))
    )
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_tokens_user_id'), ['user_id'], unique=False)

    op.create_table('api_token_sites',
    sa.Column('token_id', sa.Integer(), nullable=False),
    sa.Column('site_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['site_id'], ['sites.id'], name=op.f('fk_api_token_sites_site_id_sites'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['token_id'], ['api_tokens.id'], name=op.f('fk_api_token_sites_token_id_api_tokens'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('token_id', 'site_id', name=op.f('pk_api_token_sites'))
    )
    with op.batch_alter_table('api_token_sites', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_token_sites_site_id'), ['site_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('api_token_sites', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_token_sites_site_id'))

    op.drop_table('api_token_sites')
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_tokens_user_id'))

    op.drop_table('api_tokens')
