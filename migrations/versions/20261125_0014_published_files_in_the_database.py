"""Published files in the database: bodies once per digest, each generation's file list, and
the site's published generation

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25 04:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Every node serves from the database: a body is stored once per content digest (its gzip
    # bytes, in parts), and each generation lists its files by digest.
    op.create_table('file_bodies',
    sa.Column('digest', sa.String(length=64), nullable=False),
    sa.Column('size', sa.BigInteger(), nullable=False),
    sa.Column('gzip_size', sa.BigInteger(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('digest', name=op.f('pk_file_bodies'))
    )
    op.create_table('file_body_parts',
    sa.Column('digest', sa.String(length=64), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('data', sa.LargeBinary(), nullable=False),
    sa.ForeignKeyConstraint(['digest'], ['file_bodies.digest'], name=op.f('fk_file_body_parts_digest_file_bodies'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('digest', 'position', name=op.f('pk_file_body_parts'))
    )
    op.create_table('stored_files',
    sa.Column('generation_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('digest', sa.String(length=64), nullable=False),
    sa.Column('size', sa.BigInteger(), nullable=False),
    sa.Column('gzip_size', sa.BigInteger(), nullable=True),
    sa.Column('lastmod', sa.String(length=25), nullable=True),
    sa.ForeignKeyConstraint(['digest'], ['file_bodies.digest'], name=op.f('fk_stored_files_digest_file_bodies')),
    sa.ForeignKeyConstraint(['generation_id'], ['generations.id'], name=op.f('fk_stored_files_generation_id_generations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('generation_id', 'name', name=op.f('pk_stored_files'))
    )
    with op.batch_alter_table('stored_files', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_stored_files_digest'), ['digest'], unique=False)

    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.add_column(sa.Column('published_generation_id', sa.Integer(), nullable=True))

    # The sets published so far are folders on one machine's disk, which the other nodes
    # cannot read: nothing is imported. Every scheduled site is made due instead, so the
    # scheduler's first tick regenerates it into the database (same bytes, same lastmods: they
    # come from the generation records). A site with `schedule=off` waits for
    # `flask sitemaps generate`.
    sites = sa.table('sites', sa.column('next_run_at', sa.DateTime(timezone=True)),
                     sa.column('schedule', sa.String))
    op.execute(sites.update().where(sites.c.schedule != 'off').values(next_run_at=None))


def downgrade() -> None:
    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.drop_column('published_generation_id')

    with op.batch_alter_table('stored_files', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_stored_files_digest'))

    op.drop_table('stored_files')
    op.drop_table('file_body_parts')
    op.drop_table('file_bodies')
