"""Schedules per site: when to regenerate, the last URL change, who is generating now

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 04:41:26.291225
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.add_column(sa.Column('schedule', sa.String(length=64), server_default='every 6h', nullable=False))
        batch_op.add_column(sa.Column('change_delay', sa.Integer(), server_default='60', nullable=False))
        batch_op.add_column(sa.Column('timezone', sa.String(length=64), server_default='UTC', nullable=False))
        batch_op.add_column(sa.Column('next_run_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('changed_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('generated_seq', sa.BigInteger(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('run_owner', sa.String(length=160), nullable=True))
        batch_op.add_column(sa.Column('run_lease_until', sa.DateTime(timezone=True), nullable=True))
    # What exists now counts as generated: only later changes trigger a run.
    op.execute("UPDATE sites SET generated_seq = change_seq")

def downgrade() -> None:
    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.drop_column('run_lease_until')
        batch_op.drop_column('run_owner')
        batch_op.drop_column('generated_seq')
        batch_op.drop_column('changed_at')
        batch_op.drop_column('next_run_at')
        batch_op.drop_column('timezone')
        batch_op.drop_column('change_delay')
        batch_op.drop_column('schedule')

