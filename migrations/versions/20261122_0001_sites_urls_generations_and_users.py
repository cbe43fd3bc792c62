"""sites, urls, generations and users

Revision ID: 0001
Revises: 
Create Date: 2026-11-22 02:47:48.372398
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('sites',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('slug', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('base_url', sa.String(length=2048), nullable=False),
    sa.Column('sitemap_url', sa.String(length=2048), nullable=False),
    sa.Column('encoding', sa.String(length=32), nullable=False),
    sa.Column('default_changefreq', sa.String(length=7), nullable=True),
    sa.Column('default_priority', sa.Float(), nullable=True),
    sa.Column('max_urls_per_file', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_sites')),
    sa.UniqueConstraint('slug', name=op.f('uq_sites_slug'))
    )
    op.create_table('users',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('email', sa.String(length=254), nullable=False),
    sa.Column('password_hash', sa.String(length=255), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_users')),
    sa.UniqueConstraint('email', name=op.f('uq_users_email'))
    )
    op.create_table('generations',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('site_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('url_count', sa.Integer(), nullable=False),
    sa.Column('file_count', sa.Integer(), nullable=False),
    sa.Column('bytes', sa.BigInteger(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['site_id'], ['sites.id'], name=op.f('fk_generations_site_id_sites'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_generations'))
    )
    with op.batch_alter_table('generations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_generations_site_id'), ['site_id'], unique=False)

    op.create_table('urls',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('site_id', sa.Integer(), nullable=False),
    sa.Column('loc', sa.String(length=2048), nullable=False),
    sa.Column('lastmod', sa.String(length=25), nullable=True),
    sa.Column('changefreq', sa.String(length=7), nullable=True),
    sa.Column('priority', sa.Float(), nullable=True),
    sa.Column('deleted_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    sa.ForeignKeyConstraint(['site_id'], ['sites.id'], name=op.f('fk_urls_site_id_sites'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_urls')),
    sa.UniqueConstraint('site_id', 'loc', name=op.f('uq_urls_site_id_loc'))
    )
    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.create_index('ix_urls_site_id_id', ['site_id', 'id'], unique=False)

    op.create_table('generation_files',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('generation_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('url_count', sa.Integer(), nullable=False),
    sa.Column('bytes', sa.BigInteger(), nullable=False),
    sa.Column('gzip_bytes', sa.BigInteger(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('first_url_id', sa.Integer(), nullable=True),
    sa.Column('last_url_id', sa.Integer(), nullable=True),
    sa.Column('lastmod', sa.String(length=25), nullable=False),
    sa.ForeignKeyConstraint(['generation_id'], ['generations.id'], name=op.f('fk_generation_files_generation_id_generations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_generation_files'))
    )
    with op.batch_alter_table('generation_files', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_generation_files_generation_id'), ['generation_id'], unique=False)

    op.create_table('url_alternates',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('url_id', sa.Integer(), nullable=False),
    sa.Column('hreflang', sa.String(length=35), nullable=False),
    sa.Column('href', sa.String(length=2048), nullable=False),
    sa.ForeignKeyConstraint(['url_id'], ['urls.id'], name=op.f('fk_url_alternates_url_id_urls'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_url_alternates')),
    sa.UniqueConstraint('url_id', 'hreflang', name=op.f('uq_url_alternates_url_id_hreflang'))
    )
    op.create_table('url_images',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('url_id', sa.Integer(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('loc', sa.String(length=2048), nullable=False),
    sa.Column('title', sa.Text(), nullable=True),
    sa.Column('caption', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['url_id'], ['urls.id'], name=op.f('fk_url_images_url_id_urls'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_url_images'))
    )
    with op.batch_alter_table('url_images', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_url_images_url_id'), ['url_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('url_images', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_url_images_url_id'))

    op.drop_table('url_images')
    op.drop_table('url_alternates')
    with op.batch_alter_table('generation_files', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_generation_files_generation_id'))

    op.drop_table('generation_files')
    with op.batch_alter_table('urls', schema=None) as batch_op:
        batch_op.drop_index('ix_urls_site_id_id')

    op.drop_table('urls')
    with op.batch_alter_table('generations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_generations_site_id'))

    op.drop_table('generations')
    op.drop_table('users')
    op.drop_table('sites')
