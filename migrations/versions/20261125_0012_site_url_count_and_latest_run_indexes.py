"""site url_count and indexes for each site's latest run, announcements and failures

Revision ID: 0012
Revises: 0010
Create Date: 2026-11-25 03:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The live URLs of each site, kept by every transaction that adds or deletes some: the
    # sites page and the API list show it without counting a million rows per view.
    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.add_column(sa.Column('url_count', sa.Integer(), server_default='0',
                                      nullable=False))
    op.execute("UPDATE sites SET url_count = (SELECT count(*) FROM urls WHERE "
               "urls.site_id = sites.id AND urls.deleted_at IS NULL)")
    # Each site's newest run, and newest announcement per engine, found by one index probe
    # (the sites page sorts 10,000 sites by them); whether a site ever failed, from a small
    # index of failures alone.
    failed = {'sqlite_where': sa.text("status = 'failed'"),
              'postgresql_where': sa.text("status = 'failed'")}
    with op.batch_alter_table('generations', schema=None) as batch_op:
        batch_op.drop_index('ix_generations_site_id')
        batch_op.create_index('ix_generations_site_id_id', ['site_id', 'id'], unique=False)
        batch_op.create_index('ix_generations_failed_site_id', ['site_id'], unique=False,
                              **failed)
    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.drop_index('ix_deliveries_site_id')
        batch_op.create_index('ix_deliveries_site_id_engine_id', ['site_id', 'engine', 'id'],
                              unique=False)
        batch_op.create_index('ix_deliveries_failed_site_id', ['site_id'], unique=False,
                              **failed)


def downgrade() -> None:
    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.drop_index('ix_deliveries_failed_site_id')
        batch_op.drop_index('ix_deliveries_site_id_engine_id')
        batch_op.create_index('ix_deliveries_site_id', ['site_id'], unique=False)
    with op.batch_alter_table('generations', schema=None) as batch_op:
        batch_op.drop_index('ix_generations_failed_site_id')
        batch_op.drop_index('ix_generations_site_id_id')
        batch_op.create_index('ix_generations_site_id', ['site_id'], unique=False)
    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.drop_column('url_count')
