"""A class's end (issue 30, first half): pinned final submissions, the
eligible participants frozen at the final's start, the final's rating
fold, challenges and who allows them. The numberings final, gauntlet, challenge and practice use the
``tables`` table as it is.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision: str | None = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``pins``, ``eligible``, ``final_ratings``, ``challenges``, ``challenge_consent``."""
    op.create_table(
        "pins",
        sa.Column("participant_id", sa.Integer, sa.ForeignKey("participants.id"), primary_key=True),
        sa.Column("submission_id", sa.Integer, sa.ForeignKey("submissions.id"), nullable=False),
        sa.Column("pinned_at", sa.Float, nullable=False),
    )
    op.create_table(
        "eligible",
        sa.Column("participant_id", sa.Integer, sa.ForeignKey("participants.id"), primary_key=True),
        sa.Column("submission_id", sa.Integer, sa.ForeignKey("submissions.id"), nullable=False),
        sa.Column("ladder_rank", sa.Integer, nullable=False),
        sa.Column("ladder_conservative", sa.Float, nullable=False),
        sa.Column("seed", sa.Integer, nullable=True),
    )
    op.create_table(
        "final_ratings",
        sa.Column("through", sa.Integer, primary_key=True),
        sa.Column("entrant", sa.String(64), primary_key=True),
        sa.Column("mu", sa.Float, nullable=False),
        sa.Column("sigma", sa.Float, nullable=False),
        sa.Column("games", sa.Integer, nullable=False),
    )
    op.create_table(
        "challenges",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("participant_id", sa.Integer, sa.ForeignKey("participants.id"), nullable=False),
        sa.Column("submission_id", sa.Integer, sa.ForeignKey("submissions.id"), nullable=False),
        sa.Column("opponents", sa.JSON, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("table_number", sa.Integer, nullable=True),
        sa.Column("reason", sa.Text, nullable=True),
    )
    op.create_index("ix_challenges_participant", "challenges", ["participant_id"])
    op.create_table(
        "challenge_consent",
        sa.Column("participant_id", sa.Integer, sa.ForeignKey("participants.id"), primary_key=True),
        sa.Column("allow", sa.Integer, nullable=False),
        sa.Column("set_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    """Drop the five tables."""
    op.drop_index("ix_challenges_participant", "challenges")
    for name in ("challenge_consent", "challenges", "final_ratings", "eligible", "pins"):
        op.drop_table(name)
