"""Google News: a site's publication name and language, and a URL's article data

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-25 15:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from webapp.db import UTCDateTime

revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('sites') as batch:
        batch.add_column(sa.Column('news_name', sa.String(length=200), nullable=True))
        batch.add_column(sa.Column('news_language', sa.String(length=7), nullable=True))
        batch.add_column(sa.Column('news_due_at', UTCDateTime(), nullable=True))
    op.create_table(
        'url_news',
        sa.Column('url_id', sa.Integer(), nullable=False),
        sa.Column('publication_date', sa.String(length=25), nullable=False),
        sa.Column('title', sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(['url_id'], ['urls.id'],
                                name=op.f('fk_url_news_url_id_urls'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('url_id', name=op.f('pk_url_news')),
    )
    op.create_index('ix_url_news_publication_date', 'url_news', ['publication_date'])


def downgrade() -> None:
    op.drop_index('ix_url_news_publication_date', table_name='url_news')
    op.drop_table('url_news')
    with op.batch_alter_table('sites') as batch:
        batch.drop_column('news_due_at')
        batch.drop_column('news_language')
        batch.drop_column('news_name')
