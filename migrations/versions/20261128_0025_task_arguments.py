"""a task's arguments, kept with its record so that a task whose worker died can be retried

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-28 04:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0025'
down_revision = '0024'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Older records have none: they are not offered a retry.
    with op.batch_alter_table('tasks') as batch:
        batch.add_column(sa.Column('arguments', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('tasks') as batch:
        batch.drop_column('arguments')
