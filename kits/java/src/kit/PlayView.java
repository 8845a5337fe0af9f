package kit;

import java.util.ArrayList;
import java.util.List;

/** A play request: choose one card of legal. Everything about the hand you may
 * know is here. passed, passedTo, received and receivedFrom are null on a hold
 * hand; handPoints are the points each seat took so far this hand. */
public record PlayView(
        GameInfo game, int seat, int handNumber, int trickNumber, int leader,
        List<Played> trick, List<Trick> tricks, List<String> hand, List<String> legal,
        boolean heartsBroken, List<String> passed, Integer passedTo, List<String> received,
        Integer receivedFrom, List<Integer> handPoints, List<Integer> scores, int timeMs) {

    /** True when you lead this trick. */
    public boolean leading() { return trick.isEmpty(); }

    /** The suit led in this trick, or 0 when you lead. */
    public char ledSuit() { return trick.isEmpty() ? 0 : Cards.suit(trick.get(0).card()); }

    /** The card winning this trick so far, or null when you lead. */
    public Played winning() { return trick.isEmpty() ? null : Cards.trickWinner(trick); }

    /** True when three cards are already on the table. */
    public boolean lastToPlay() { return trick.size() == 3; }

    /** Penalty points of the cards played to this trick so far. */
    public int pointsOnTable() {
        int n = 0;
        for (Played p : trick) n += Cards.points(p.card());
        return n;
    }

    /** Every card played in this hand so far, finished tricks first. */
    public List<String> played() {
        List<String> out = new ArrayList<>();
        for (Trick t : tricks) for (Played p : t.cards()) out.add(p.card());
        for (Played p : trick) out.add(p.card());
        return out;
    }
}
