"""Issue 28's sign-in: participants' display names, browser sessions, one-time links.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision: str | None = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add ``participants.display_name``/``display_key`` (filled from the
    names), and the ``sessions`` and ``invites`` tables of :mod:`arena.server.db`."""
    # Plain ALTER TABLE ADD COLUMN (SQLite has it): no copy of a table others reference.
    op.add_column("participants", sa.Column("display_name", sa.String(64), nullable=True))
    op.add_column("participants", sa.Column("display_key", sa.String(64), nullable=True))
    participants = sa.table(
        "participants",
        sa.column("id", sa.Integer),
        sa.column("name", sa.String),
        sa.column("display_name", sa.String),
        sa.column("display_key", sa.String),
    )
    conn = op.get_bind()
    taken: set[str] = set()
    rows = conn.execute(sa.select(participants.c.id, participants.c.name).order_by("id")).all()
    for pid, name in rows:
        shown = name[:32]
        if shown.casefold() in taken:  # "Ann" and "ann", both added before 0002
            shown = f"{name[:24]} ({pid})"
        taken.add(shown.casefold())
        conn.execute(
            sa.update(participants)
            .where(participants.c.id == pid)
            .values(display_name=shown, display_key=shown.casefold())
        )
    op.create_index("ix_participants_display_key", "participants", ["display_key"], unique=True)
    op.create_table(
        "sessions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("participant_id", sa.Integer, sa.ForeignKey("participants.id"), nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.Column("ended_at", sa.Float, nullable=True),
    )
    op.create_index("ix_sessions_participant", "sessions", ["participant_id"])
    op.create_table(
        "invites",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("participant_id", sa.Integer, sa.ForeignKey("participants.id"), nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.Column("used_at", sa.Float, nullable=True),
    )


def downgrade() -> None:
    """Drop the sessions and links, and the display names."""
    op.drop_table("invites")
    op.drop_index("ix_sessions_participant", "sessions")
    op.drop_table("sessions")
    op.drop_index("ix_participants_display_key", "participants")
    with op.batch_alter_table("participants") as batch:
        batch.drop_column("display_key")
        batch.drop_column("display_name")
