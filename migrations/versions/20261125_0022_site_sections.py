"""Site sections: the setting, the definition URLs were last assigned with, and each URL's
section with an index to stream one section in id order

Revision ID: 0022
Revises: 0023
Create Date: 2026-11-25 15:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0022'
down_revision = '0023'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable columns need no table rebuild on SQLite (no batch mode for the urls table).
    op.add_column('sites', sa.Column('sections', sa.Text(), nullable=True))
    op.add_column('sites', sa.Column('sections_assigned', sa.Text(), nullable=True))
    op.add_column('urls', sa.Column('section', sa.String(length=40), nullable=True))
    op.create_index('ix_urls_site_id_section_id', 'urls', ['site_id', 'section', 'id'])


def downgrade() -> None:
    op.drop_index('ix_urls_site_id_section_id', table_name='urls')
    with op.batch_alter_table('urls') as batch:
        batch.drop_column('section')
    with op.batch_alter_table('sites') as batch:
        batch.drop_column('sections_assigned')
        batch.drop_column('sections')
