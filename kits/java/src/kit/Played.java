package kit;

/** A card on the table: who played it. */
public record Played(int seat, String card) {}
