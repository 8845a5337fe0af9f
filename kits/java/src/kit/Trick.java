package kit;

import java.util.List;

/** A finished trick: leader, the four cards in play order, winner, points. */
public record Trick(int leader, List<Played> cards, int winner, int points) {}
