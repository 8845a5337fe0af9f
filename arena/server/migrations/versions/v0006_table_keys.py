"""Table keys of finished tables, for a participant's download of a table it sat at.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision: str | None = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``table_keys`` (:data:`arena.server.db.table_keys`)."""
    op.create_table(
        "table_keys",
        sa.Column("table_id", sa.Integer, sa.ForeignKey("tables.id"), primary_key=True),
        sa.Column("table_key", sa.String(64), nullable=False),
    )


def downgrade() -> None:
    """Drop ``table_keys``."""
    op.drop_table("table_keys")
