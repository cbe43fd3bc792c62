"""url lastmod index covers deleted_at

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 12:40:00.000000
"""

from __future__ import annotations

from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # With deleted_at in it, the site overview's lastmod checks over live URLs read the index
    # alone: on a 1,000,000-URL site, no longer a lookup of every row.
    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.drop_index('ix_urls_site_id_lastmod_id')
        batch_op.create_index('ix_urls_site_id_lastmod_id_deleted_at',
                              ['site_id', 'lastmod', 'id', 'deleted_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.drop_index('ix_urls_site_id_lastmod_id_deleted_at')
        batch_op.create_index('ix_urls_site_id_lastmod_id', ['site_id', 'lastmod', 'id'],
                              unique=False)
