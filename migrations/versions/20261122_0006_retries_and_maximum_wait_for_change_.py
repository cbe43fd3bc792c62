"""Retries and a maximum wait for change-triggered runs

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22 05:02:09.279215
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A ping address is a template with the encoded sitemap URL in it: longer than a URL.
    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.alter_column('target', existing_type=sa.String(length=2048), type_=sa.Text(),
                              existing_nullable=True)
    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.add_column(sa.Column('pending_since', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('retry_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.drop_column('retry_at')
        batch_op.drop_column('pending_since')
    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.alter_column('target', existing_type=sa.Text(), type_=sa.String(length=2048),
                              existing_nullable=True)

