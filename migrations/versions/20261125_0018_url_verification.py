"""URL verification: each URL's last check on the live site, verification runs, and the
site settings that decide what a check changes in the sitemap

Revision ID: 0018
Revises: 0019
Create Date: 2026-11-25 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0018'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.add_column(sa.Column('lastmod_source', sa.String(length=8), nullable=False,
                                      server_default='given'))
        batch_op.add_column(sa.Column('leave_out', sa.String(length=64), nullable=False,
                                      server_default='broken,noindex,canonical'))
        batch_op.add_column(sa.Column('verify_schedule', sa.String(length=64), nullable=False,
                                      server_default='off'))
        batch_op.add_column(sa.Column('verify_next_run_at', sa.DateTime(timezone=True),
                                      nullable=True))
        batch_op.add_column(sa.Column('user_agent', sa.String(length=300), nullable=True))
        batch_op.add_column(sa.Column('verify_ignore', sa.Text(), nullable=True))
    with op.batch_alter_table('generations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('left_out', sa.JSON(), nullable=True))
    op.create_table('url_checks',
    sa.Column('url_id', sa.Integer(), nullable=False),
    sa.Column('site_id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=True),
    sa.Column('checked_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('outcome', sa.String(length=12), nullable=False),
    sa.Column('status', sa.Integer(), nullable=True),
    sa.Column('final_url', sa.String(length=2048), nullable=True),
    sa.Column('noindex', sa.Boolean(), nullable=False),
    sa.Column('canonical', sa.String(length=2048), nullable=True),
    sa.Column('content_type', sa.String(length=200), nullable=True),
    sa.Column('etag', sa.String(length=300), nullable=True),
    sa.Column('last_modified', sa.String(length=64), nullable=True),
    sa.Column('fingerprint', sa.String(length=64), nullable=True),
    sa.Column('content_changed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('given_lastmod', sa.String(length=25), nullable=True),
    sa.ForeignKeyConstraint(['site_id'], ['sites.id'], name=op.f('fk_url_checks_site_id_sites'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['url_id'], ['urls.id'], name=op.f('fk_url_checks_url_id_urls'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('url_id', name=op.f('pk_url_checks'))
    )
    with op.batch_alter_table('url_checks', schema=None) as batch_op:
        batch_op.create_index('ix_url_checks_site_id_outcome', ['site_id', 'outcome'], unique=False)
    op.create_table('verify_runs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('site_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('owner', sa.String(length=160), nullable=True),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('total', sa.Integer(), nullable=False),
    sa.Column('done', sa.Integer(), nullable=False),
    sa.Column('counts', sa.JSON(), nullable=True),
    sa.Column('dates_moved', sa.Integer(), server_default='0', nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['site_id'], ['sites.id'], name=op.f('fk_verify_runs_site_id_sites'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_verify_runs'))
    )
    with op.batch_alter_table('verify_runs', schema=None) as batch_op:
        batch_op.create_index('ix_verify_runs_site_id_id', ['site_id', 'id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('verify_runs', schema=None) as batch_op:
        batch_op.drop_index('ix_verify_runs_site_id_id')
    op.drop_table('verify_runs')
    with op.batch_alter_table('url_checks', schema=None) as batch_op:
        batch_op.drop_index('ix_url_checks_site_id_outcome')
    op.drop_table('url_checks')
    with op.batch_alter_table('generations', schema=None) as batch_op:
        batch_op.drop_column('left_out')
    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.drop_column('verify_ignore')
        batch_op.drop_column('user_agent')
        batch_op.drop_column('verify_next_run_at')
        batch_op.drop_column('verify_schedule')
        batch_op.drop_column('leave_out')
        batch_op.drop_column('lastmod_source')
