"""Videos of a URL (Google video sitemap extension), in a table of their own

Revision ID: 0020
Revises: 0022
Create Date: 2026-11-25 15:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0020'
down_revision = '0022'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'url_videos',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('url_id', sa.Integer(), nullable=False),
        sa.Column('position', sa.Integer(), nullable=False),
        sa.Column('thumbnail_loc', sa.String(length=2048), nullable=False),
        sa.Column('title', sa.Text(), nullable=False),
        sa.Column('description', sa.Text(), nullable=False),
        sa.Column('content_loc', sa.String(length=2048), nullable=True),
        sa.Column('player_loc', sa.String(length=2048), nullable=True),
        sa.Column('duration', sa.Integer(), nullable=True),
        sa.Column('expiration_date', sa.String(length=25), nullable=True),
        sa.Column('rating', sa.Float(), nullable=True),
        sa.Column('view_count', sa.BigInteger(), nullable=True),
        sa.Column('publication_date', sa.String(length=25), nullable=True),
        sa.Column('family_friendly', sa.Boolean(), nullable=True),
        sa.Column('restriction_relationship', sa.String(length=5), nullable=True),
        sa.Column('restriction_countries', sa.Text(), nullable=True),
        sa.Column('platform_relationship', sa.String(length=5), nullable=True),
        sa.Column('platforms', sa.String(length=20), nullable=True),
        sa.Column('requires_subscription', sa.Boolean(), nullable=True),
        sa.Column('uploader', sa.String(length=255), nullable=True),
        sa.Column('uploader_info', sa.String(length=2048), nullable=True),
        sa.Column('live', sa.Boolean(), nullable=True),
        sa.Column('tags', sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(['url_id'], ['urls.id'], name=op.f('fk_url_videos_url_id_urls'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_url_videos')),
    )
    with op.batch_alter_table('url_videos') as batch:
        batch.create_index(batch.f('ix_url_videos_url_id'), ['url_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('url_videos') as batch:
        batch.drop_index(batch.f('ix_url_videos_url_id'))
    op.drop_table('url_videos')
