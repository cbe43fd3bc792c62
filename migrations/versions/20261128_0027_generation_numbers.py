"""generations.number: a generation's number within its site, as people call it

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-28 08:15:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0027'
down_revision = '0026'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The dashboard numbered a site's generations by counting them, while the task page, the
    # CLI and the API said the installation-wide id: `rollback SITE 5` rolled back another
    # generation than the dashboard's 5. Generations are never deleted, so each one's place
    # among its site's, in id order, is its number for good.
    op.add_column('generations', sa.Column('number', sa.Integer(), nullable=True))
    op.execute("""
        UPDATE generations SET number = numbered.n
        FROM (SELECT id, row_number() OVER (PARTITION BY site_id ORDER BY id) AS n
              FROM generations) AS numbered
        WHERE numbered.id = generations.id
    """)
    with op.batch_alter_table('generations', schema=None) as batch_op:
        batch_op.alter_column('number', existing_type=sa.Integer(), nullable=False)
        batch_op.create_index('ix_generations_site_id_number', ['site_id', 'number'],
                              unique=True)


def downgrade() -> None:
    with op.batch_alter_table('generations', schema=None) as batch_op:
        batch_op.drop_index('ix_generations_site_id_number')
        batch_op.drop_column('number')
