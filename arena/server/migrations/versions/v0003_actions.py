"""Organiser actions (issue 28): the ``actions`` table.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision: str | None = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create :data:`arena.server.db.actions`."""
    op.create_table(
        "actions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("participant_id", sa.Integer, sa.ForeignKey("participants.id"), nullable=True),
        sa.Column("submission_id", sa.Integer, sa.ForeignKey("submissions.id"), nullable=True),
        sa.Column("table_id", sa.Integer, sa.ForeignKey("tables.id"), nullable=True),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("result", sa.Text, nullable=True),
        sa.Column("requested_at", sa.Float, nullable=False),
        sa.Column("applied_at", sa.Float, nullable=True),
        sa.Column("refold", sa.JSON, nullable=True),
        sa.Column("refolded_at", sa.Float, nullable=True),
    )
    op.create_index("ix_actions_status", "actions", ["status"])


def downgrade() -> None:
    """Drop :data:`arena.server.db.actions`."""
    op.drop_index("ix_actions_status", "actions")
    op.drop_table("actions")
