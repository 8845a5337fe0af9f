package kit;

import java.util.List;

/** The game_start notification: the game, your seat, the players by seat, how
 * the game ends (targetScore or a fixed number of hands; the other is null)
 * and a seed for your own random choices. */
public record GameInfo(
        String gameId, int seat, List<String> players, Integer targetScore, Integer hands, long seed) {}
