//! A Hearts bot written with the hearts-arena Rust kit: kit.rs runs the protocol
//! loop; this file only chooses moves. Put your strategy in `choose_pass` and
//! `choose_play`. Log with `kit::log` (standard error); never print to stdout.
//!
//!   pass  the queen, king and ace of spades first, then the highest hearts,
//!         then the highest other cards.
//!   play  leading: the lowest card; following suit: the highest card that
//!         still loses to the card winning the trick (duck), else, last to a
//!         trick without points, the highest card, else the lowest; void in
//!         the led suit: the queen of spades, then the highest heart, then
//!         the highest card.
mod kit;

use kit::{Card, PassView, PlayView, Strategy};

struct SampleBot;

impl Strategy for SampleBot {
    fn name(&self) -> String {
        "rust-kit".to_string()
    }
    fn author(&self) -> Option<String> {
        Some("hearts-arena kits".to_string())
    }
    fn version(&self) -> Option<String> {
        Some("1".to_string())
    }

    fn choose_pass(&mut self, view: &PassView) -> Vec<Card> {
        let first: Vec<Card> =
            ["QS", "AS", "KS"].iter().map(|c| c.to_string()).filter(|c| view.hand.contains(c)).collect();
        let rest: Vec<Card> = view.hand.iter().filter(|c| !first.contains(c)).cloned().collect();
        let (hearts, others): (Vec<Card>, Vec<Card>) = rest.into_iter().partition(|c| kit::is_heart(c));
        let mut out = first;
        out.extend(kit::highest(&hearts, hearts.len()));
        out.extend(kit::highest(&others, others.len()));
        out.truncate(3);
        out
    }

    fn choose_play(&mut self, view: &PlayView) -> Card {
        let legal = &view.legal;
        let (led, winning) = match (view.led_suit(), view.winning()) {
            (Some(led), Some(winning)) => (led, winning),
            _ => return kit::lowest(legal), // leading
        };
        let follow: Vec<Card> = legal.iter().filter(|c| kit::suit(c) == led).cloned().collect();
        if !follow.is_empty() {
            let under: Vec<Card> =
                follow.iter().filter(|c| kit::rank(c) < kit::rank(&winning.card)).cloned().collect();
            if !under.is_empty() {
                return kit::highest(&under, 1).remove(0);
            }
            if view.last_to_play() && view.points_on_table() == 0 && !follow.contains(&"QS".to_string()) {
                return kit::highest(&follow, 1).remove(0);
            }
            return kit::lowest(&follow);
        }
        if legal.contains(&"QS".to_string()) {
            return "QS".to_string();
        }
        let hearts: Vec<Card> = legal.iter().filter(|c| kit::is_heart(c)).cloned().collect();
        kit::highest(if hearts.is_empty() { legal } else { &hearts }, 1).remove(0)
    }
}

fn main() {
    kit::run(&mut SampleBot);
}
