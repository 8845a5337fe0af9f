package kit;

import java.util.List;

/** A pass request: choose three cards of hand to give to seat to. game is null
 * if no game_start was seen; direction "left", "right" or "across" (R3);
 * scores the four totals before this hand; timeMs the milliseconds you have. */
public record PassView(
        GameInfo game, int handNumber, String direction, int to, List<String> hand,
        List<Integer> scores, int timeMs) {}
