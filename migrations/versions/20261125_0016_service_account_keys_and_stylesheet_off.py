"""Service-account keys uploaded in the dashboard (sealed), and the XSL stylesheet off for new
sites (existing sites keep theirs)

Revision ID: 0016
Revises: 0017
Create Date: 2026-11-25 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0016'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'service_account_keys',
        sa.Column('site_id', sa.Integer(), nullable=False),
        sa.Column('client_email', sa.String(length=320), nullable=False),
        sa.Column('sealed', sa.Text(), nullable=False),
        sa.Column('uploaded_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['site_id'], ['sites.id'],
                                name=op.f('fk_service_account_keys_site_id_sites'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('site_id', name=op.f('pk_service_account_keys')),
    )
    with op.batch_alter_table('sites') as batch:
        batch.alter_column('stylesheet', existing_type=sa.Boolean(), existing_nullable=False,
                           server_default=sa.false())


def downgrade() -> None:
    with op.batch_alter_table('sites') as batch:
        batch.alter_column('stylesheet', existing_type=sa.Boolean(), existing_nullable=False,
                           server_default=sa.true())
    op.drop_table('service_account_keys')
