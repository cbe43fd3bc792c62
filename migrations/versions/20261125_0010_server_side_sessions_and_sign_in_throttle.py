"""Server-side sessions and the sign-in throttle by client address

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 02:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A signed-in browser is a row (only a digest of its cookie's secret): signing out deletes
    # it, so a copied cookie stops working too.
    op.create_table('user_sessions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('secret_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_seen_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_user_sessions_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_user_sessions')),
    sa.UniqueConstraint('secret_hash', name=op.f('uq_user_sessions_secret_hash'))
    )
    with op.batch_alter_table('user_sessions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_user_sessions_user_id'), ['user_id'], unique=False)

    # Failed sign-ins counted per client address and per (e-mail, address), whether or not the
    # e-mail has an account; the users table's own counters are no longer read.
    op.create_table('sign_in_throttles',
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('attempts', sa.Integer(), server_default='0', nullable=False),
    sa.Column('last_attempt_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('locked_until', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_sign_in_throttles'))
    )
    with op.batch_alter_table('sign_in_throttles', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_sign_in_throttles_last_attempt_at'), ['last_attempt_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('sign_in_throttles', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_sign_in_throttles_last_attempt_at'))

    op.drop_table('sign_in_throttles')
    with op.batch_alter_table('user_sessions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_user_sessions_user_id'))

    op.drop_table('user_sessions')
