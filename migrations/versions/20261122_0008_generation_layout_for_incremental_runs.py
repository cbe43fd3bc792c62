"""generation layout for incremental runs

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22 07:50:31.076038
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Which files a later run may reuse: see Generation.layout.
    with op.batch_alter_table('generations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('layout', sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('generations', schema=None) as batch_op:
        batch_op.drop_column('layout')

