"""Sign-in throttle and the URL list's lastmod index

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 04:53:57.781225
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.create_index('ix_urls_site_id_lastmod_id', ['site_id', 'lastmod', 'id'], unique=False)
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('failed_sign_ins', sa.Integer(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('locked_until', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('last_sign_in_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_column('last_sign_in_at')
        batch_op.drop_column('locked_until')
        batch_op.drop_column('failed_sign_ins')
    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.drop_index('ix_urls_site_id_lastmod_id')

