"""drop users.failed_sign_ins and users.locked_until, unused since the throttle moved to its table

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-28 04:45:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0026'
down_revision = '0025'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Sign-in failures are counted per client address and account in sign_in_throttle (0010);
    # these two columns of the account have been written and read by nothing since.
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_column('locked_until')
        batch_op.drop_column('failed_sign_ins')


def downgrade() -> None:
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('failed_sign_ins', sa.Integer(), server_default='0',
                                      nullable=False))
        batch_op.add_column(sa.Column('locked_until', sa.DateTime(timezone=True), nullable=True))
