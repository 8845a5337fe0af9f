import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import kit.Bot;
import kit.Cards;
import kit.PassView;
import kit.PlayView;

/** A Hearts bot written with the hearts-arena Java kit: kit/ runs the protocol
 * loop; this class only chooses moves. Put your strategy in choosePass and
 * choosePlay. Log with Bot.log (standard error); never print to System.out.
 *
 * <pre>
 *   pass  the queen, king and ace of spades first, then the highest hearts,
 *         then the highest other cards.
 *   play  leading: the lowest card; following suit: the highest card that
 *         still loses to the card winning the trick (duck), else, last to a
 *         trick without points, the highest card, else the lowest; void in
 *         the led suit: the queen of spades, then the highest heart, then
 *         the highest card.
 * </pre> */
public class SampleBot extends Bot {
    SampleBot() {
        name = "java-kit";
        author = "hearts-arena kits";
        version = "1";
    }

    @Override
    public List<String> choosePass(PassView view) {
        List<String> first = new ArrayList<>(), hearts = new ArrayList<>(), others = new ArrayList<>();
        for (String c : List.of("QS", "AS", "KS")) if (view.hand().contains(c)) first.add(c);
        for (String c : view.hand()) {
            if (first.contains(c)) continue;
            (Cards.isHeart(c) ? hearts : others).add(c);
        }
        List<String> out = new ArrayList<>(first);
        out.addAll(Cards.highest(hearts, hearts.size()));
        out.addAll(Cards.highest(others, others.size()));
        return out.subList(0, 3);
    }

    @Override
    public String choosePlay(PlayView view) {
        List<String> legal = view.legal();
        if (view.leading()) return Cards.lowest(legal);
        String winning = view.winning().card();
        List<String> follow = new ArrayList<>();
        for (String c : legal) if (Cards.suit(c) == view.ledSuit()) follow.add(c);
        if (!follow.isEmpty()) {
            List<String> under = new ArrayList<>();
            for (String c : follow) if (Cards.rank(c) < Cards.rank(winning)) under.add(c);
            if (!under.isEmpty()) return Cards.highest(under);
            if (view.lastToPlay() && view.pointsOnTable() == 0 && !follow.contains("QS"))
                return Cards.highest(follow);
            return Cards.lowest(follow);
        }
        if (legal.contains("QS")) return "QS";
        List<String> hearts = new ArrayList<>();
        for (String c : legal) if (Cards.isHeart(c)) hearts.add(c);
        return hearts.isEmpty() ? Cards.highest(legal) : Cards.highest(hearts);
    }

    public static void main(String[] args) throws IOException {
        new SampleBot().run();
    }
}
