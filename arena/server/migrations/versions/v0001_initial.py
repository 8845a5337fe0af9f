"""The first schema: meta, participants, tokens, submissions, tables, games, ratings.

Revision ID: 0001
Revises: none
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision: str | None = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create every table of :mod:`arena.server.db` as of revision 0001."""
    op.create_table(
        "meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "participants",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("participant_id", sa.Integer, sa.ForeignKey("participants.id"), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("revoked_at", sa.Float, nullable=True),
    )
    op.create_table(
        "submissions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("participant_id", sa.Integer, sa.ForeignKey("participants.id"), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("received_at", sa.Float, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("failed_step", sa.String(16), nullable=True),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("check_output", sa.Text, nullable=True),
        sa.Column("ranked_games", sa.Integer, nullable=False),
        sa.Column("joined_table", sa.Integer, nullable=True),
        sa.Column("faults_in_row", sa.Integer, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("step_started_at", sa.Float, nullable=True),
        sa.Column("ranked_at", sa.Float, nullable=True),
    )
    op.create_index("ix_submissions_participant", "submissions", ["participant_id"])
    op.create_index("ix_submissions_status", "submissions", ["status"])
    op.create_table(
        "tables",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("numbering", sa.String(16), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("deal_key", sa.String(32), nullable=False),
        sa.Column("seating", sa.JSON, nullable=False),
        sa.Column("fold_through", sa.Integer, nullable=False),
        sa.Column("focus", sa.String(64), nullable=True),
        sa.Column("active", sa.JSON, nullable=False),
        sa.Column("submission_id", sa.Integer, sa.ForeignKey("submissions.id"), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("void_reason", sa.Text, nullable=True),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("chosen_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float, nullable=True),
        sa.UniqueConstraint("numbering", "number", name="uq_tables_numbering_number"),
    )
    op.create_index("ix_tables_status", "tables", ["status"])
    op.create_table(
        "games",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("table_id", sa.Integer, sa.ForeignKey("tables.id"), nullable=False),
        sa.Column("rotation", sa.Integer, nullable=False),
        sa.Column("record", sa.JSON, nullable=False),
        sa.UniqueConstraint("table_id", "rotation", name="uq_games_table_rotation"),
    )
    op.create_table(
        "ratings",
        sa.Column("through", sa.Integer, primary_key=True),
        sa.Column("entrant", sa.String(64), primary_key=True),
        sa.Column("submission_id", sa.Integer, sa.ForeignKey("submissions.id"), nullable=True),
        sa.Column("mu", sa.Float, nullable=False),
        sa.Column("sigma", sa.Float, nullable=False),
        sa.Column("games", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    """Drop every table (the competition's data with them)."""
    for name in ("ratings", "games", "tables", "submissions", "tokens", "participants", "meta"):
        op.drop_table(name)
