"""The Dask workers the runner has seen: admitted, refused, flagged (issue 29).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision: str | None = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``workers`` (:data:`arena.server.db.workers`)."""
    op.create_table(
        "workers",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("address", sa.String(256), nullable=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_index("ix_workers_status", "workers", ["status"])


def downgrade() -> None:
    """Drop ``workers``."""
    op.drop_index("ix_workers_status", "workers")
    op.drop_table("workers")
