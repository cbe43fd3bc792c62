"""Each user's language and timezone for the dashboard

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25 11:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('users') as batch:
        batch.add_column(sa.Column('language', sa.String(length=16), nullable=True))
        batch.add_column(sa.Column('timezone', sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('users') as batch:
        batch.drop_column('timezone')
        batch.drop_column('language')
