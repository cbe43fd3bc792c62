"""leave_out's default also leaves out URLs that robots.txt blocks

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-28 08:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0028'
down_revision = '0027'
branch_labels = None
depends_on = None

EARLIER, NOW = "broken,noindex,canonical", "broken,noindex,canonical,blocked"


def upgrade() -> None:
    # Google reports a listed URL that robots.txt blocks as an error ("Submitted URL blocked
    # by robots.txt"). Sites on the earlier default get it; a site that chose its own list
    # keeps it.
    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.alter_column('leave_out', existing_type=sa.String(length=64),
                              server_default=NOW, existing_nullable=False)
    op.execute(sa.text("UPDATE sites SET leave_out = :now WHERE leave_out = :earlier")
               .bindparams(now=NOW, earlier=EARLIER))


def downgrade() -> None:
    op.execute(sa.text("UPDATE sites SET leave_out = :earlier WHERE leave_out = :now")
               .bindparams(now=NOW, earlier=EARLIER))
    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.alter_column('leave_out', existing_type=sa.String(length=64),
                              server_default=EARLIER, existing_nullable=False)
