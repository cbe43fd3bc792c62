"""indexes of each site's successful and unfinished runs; room for HOT updates of sites

Revision ID: 0024
Revises: 0021
Create Date: 2026-11-27 02:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0024'
down_revision = '0021'
branch_labels = None
depends_on = None

SUCCEEDED = "status = 'succeeded'"
UNFINISHED = "status IN ('running', 'publishing')"


def upgrade() -> None:
    # A run reads its site's newest successful runs (its last files, the sets still kept) and
    # marks the site's unfinished runs failed: through these, it reads as many rows whatever
    # the number of runs the site has had, instead of every one of them.
    with op.batch_alter_table('generations', schema=None) as batch_op:
        batch_op.create_index('ix_generations_succeeded_site_id_id', ['site_id', 'id'],
                              unique=False, sqlite_where=sa.text(SUCCEEDED),
                              postgresql_where=sa.text(SUCCEEDED))
        batch_op.create_index('ix_generations_unfinished_site_id', ['site_id'], unique=False,
                              sqlite_where=sa.text(UNFINISHED),
                              postgresql_where=sa.text(UNFINISHED))
    # Every run rewrites its site's row: with room left on each page, PostgreSQL writes the
    # new version beside the old (a HOT update, no index touched) instead of a new place and
    # an entry in each of the table's indexes. Pages written from now on keep that room.
    if op.get_bind().dialect.name == 'postgresql':
        op.execute('ALTER TABLE sites SET (fillfactor = 70)')


def downgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute('ALTER TABLE sites RESET (fillfactor)')
    with op.batch_alter_table('generations', schema=None) as batch_op:
        batch_op.drop_index('ix_generations_unfinished_site_id')
        batch_op.drop_index('ix_generations_succeeded_site_id_id')
