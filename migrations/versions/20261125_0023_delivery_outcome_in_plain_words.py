"""A delivery's outcome in plain words for the reader's language (webapp.said items)

Revision ID: 0023
Revises: 0016
Create Date: 2026-11-25 15:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0023'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Older rows keep their English outcome only, and are shown as they are.
    with op.batch_alter_table('deliveries') as batch:
        batch.add_column(sa.Column('outcome_said', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('deliveries') as batch:
        batch.drop_column('outcome_said')
