//! The hearts-arena bot kit for Rust: the protocol loop is done for you
//! (protocol/README.md describes the messages). Implement `Strategy`
//! (`choose_pass`, `choose_play`; see main.rs) and hand it to `kit::run`.
//!
//! The views mirror the Python kit (arena/botkit.py): the same names, the same
//! fields in the same order. Cards are the protocol's two-character strings
//! ("QS", "TD"). JSON: serde_json (Debian: librust-serde-json-dev).
//!
//! Log with `kit::log` (standard error); standard output carries the protocol only.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::collections::HashSet;
use std::io::{self, BufRead, Write};
use std::panic::{self, AssertUnwindSafe};

/// Ranks from low to high (T is the ten).
pub const RANKS: &str = "23456789TJQKA";
/// Suits in the protocol's sort order: clubs, diamonds, spades, hearts.
pub const SUITS: &str = "CDSH";
pub const QUEEN_OF_SPADES: &str = "QS";
pub const TWO_OF_CLUBS: &str = "2C";

pub type Card = String;

/// 0 for a two ... 12 for an ace; panics on a bad card.
pub fn rank(card: &str) -> usize {
    RANKS.find(&card[0..1]).expect("bad card")
}
/// The suit letter: 'C', 'D', 'S' or 'H'.
pub fn suit(card: &str) -> char {
    card.as_bytes()[1] as char
}
fn suit_order(card: &str) -> usize {
    SUITS.find(suit(card)).unwrap_or(0)
}
pub fn is_heart(card: &str) -> bool {
    suit(card) == 'H'
}
/// Penalty points of a card (R11): 1 per heart, 13 for the queen of spades.
pub fn points(card: &str) -> u32 {
    if card == QUEEN_OF_SPADES {
        13
    } else if is_heart(card) {
        1
    } else {
        0
    }
}
/// Cards in the protocol's order: by suit (C, D, S, H), then rank.
pub fn sort_cards(cards: &[Card]) -> Vec<Card> {
    let mut out = cards.to_vec();
    out.sort_by_key(|c| (suit_order(c), rank(c)));
    out
}
/// The n highest cards by rank; equal ranks: hearts, spades, diamonds, clubs
/// first (as the referee's default pass). Panics when there are too few.
pub fn highest(cards: &[Card], n: usize) -> Vec<Card> {
    assert!(cards.len() >= n, "{} cards asked, {} given", n, cards.len());
    let mut out = cards.to_vec();
    out.sort_by_key(|c| std::cmp::Reverse((rank(c), suit_order(c))));
    out.truncate(n);
    out
}
/// The lowest card by rank; equal ranks: the first in protocol order. Panics on none.
pub fn lowest(cards: &[Card]) -> Card {
    let sorted = sort_cards(cards);
    sorted.iter().min_by_key(|c| rank(c)).expect("no cards").clone()
}
/// The referee's default pass: the three highest cards.
pub fn default_pass(hand: &[Card]) -> Vec<Card> {
    highest(hand, 3)
}

/// A card on the table: who played it.
#[derive(Clone, Debug, PartialEq)]
pub struct Played {
    pub seat: usize,
    pub card: Card,
}

/// A finished trick: leader, the four cards in play order, winner, points.
#[derive(Clone, Debug)]
pub struct Trick {
    pub leader: usize,
    pub cards: Vec<Played>,
    pub winner: usize,
    pub points: u32,
}

/// The card winning a (possibly unfinished) trick so far (R10). Panics on an empty trick.
pub fn trick_winner(played: &[Played]) -> Played {
    let led = suit(&played[0].card);
    played.iter().filter(|p| suit(&p.card) == led).max_by_key(|p| rank(&p.card)).unwrap().clone()
}

/// The game_start notification; `target_score` or `hands` is None.
#[derive(Clone, Debug)]
pub struct GameInfo {
    pub game_id: String,
    pub seat: usize,
    pub players: Vec<String>,
    pub target_score: Option<u32>,
    pub hands: Option<u32>,
    pub seed: i64,
}

/// A pass request: choose three cards of `hand` to give to seat `to`.
/// `time_ms`: milliseconds you have to answer.
#[derive(Clone, Debug)]
pub struct PassView {
    pub game: Option<GameInfo>,
    pub hand_number: u32,
    pub direction: String,
    pub to: usize,
    pub hand: Vec<Card>,
    pub scores: Vec<u32>,
    pub time_ms: u64,
}

/// A play request: choose one card of `legal`. `passed`, `passed_to`,
/// `received` and `received_from` are None on a hold hand.
#[derive(Clone, Debug)]
pub struct PlayView {
    pub game: Option<GameInfo>,
    pub seat: usize,
    pub hand_number: u32,
    pub trick_number: u32,
    pub leader: usize,
    pub trick: Vec<Played>,
    pub tricks: Vec<Trick>,
    pub hand: Vec<Card>,
    pub legal: Vec<Card>,
    pub hearts_broken: bool,
    pub passed: Option<Vec<Card>>,
    pub passed_to: Option<usize>,
    pub received: Option<Vec<Card>>,
    pub received_from: Option<usize>,
    pub hand_points: Vec<u32>,
    pub scores: Vec<u32>,
    pub time_ms: u64,
}

impl PlayView {
    /// True when you lead this trick.
    pub fn leading(&self) -> bool {
        self.trick.is_empty()
    }
    /// The suit led in this trick, None when you lead.
    pub fn led_suit(&self) -> Option<char> {
        self.trick.first().map(|p| suit(&p.card))
    }
    /// The card winning this trick so far, None when you lead.
    pub fn winning(&self) -> Option<Played> {
        if self.trick.is_empty() {
            None
        } else {
            Some(trick_winner(&self.trick))
        }
    }
    /// True when three cards are already on the table.
    pub fn last_to_play(&self) -> bool {
        self.trick.len() == 3
    }
    /// Penalty points of the cards played to this trick so far.
    pub fn points_on_table(&self) -> u32 {
        self.trick.iter().map(|p| points(&p.card)).sum()
    }
    /// Every card played in this hand so far, finished tricks first.
    pub fn played(&self) -> Vec<Card> {
        let mut out: Vec<Card> = self.tricks.iter().flat_map(|t| t.cards.iter().map(|p| p.card.clone())).collect();
        out.extend(self.trick.iter().map(|p| p.card.clone()));
        out
    }
}

/// Your bot: a name for the hello answer and the two choices (the defaults
/// are the referee's default moves).
pub trait Strategy {
    fn name(&self) -> String {
        "kit-bot".to_string()
    }
    fn author(&self) -> Option<String> {
        None
    }
    fn version(&self) -> Option<String> {
        None
    }
    /// Three distinct cards of `view.hand` to pass to `view.to`.
    fn choose_pass(&mut self, view: &PassView) -> Vec<Card> {
        default_pass(&view.hand)
    }
    /// One card of `view.legal`.
    fn choose_play(&mut self, view: &PlayView) -> Card {
        view.legal[0].clone()
    }
    /// Replace a panicking or illegal choice by the default move (logged);
    /// false sends it as it is (and lets a panic end the bot).
    fn fallback(&self) -> bool {
        true
    }
}

/// One line on standard error, prefixed "kit: ".
pub fn log(text: &str) {
    eprintln!("kit: {}", text);
}

fn cards(v: &Value) -> Option<Vec<Card>> {
    v.as_array()?.iter().map(|c| c.as_str().map(String::from)).collect()
}
fn nums(v: &Value) -> Option<Vec<u32>> {
    v.as_array()?.iter().map(|c| c.as_u64().map(|n| n as u32)).collect()
}
fn uint(v: &Value) -> Option<u64> {
    v.as_u64()
}
fn played(v: &Value) -> Option<Vec<Played>> {
    v.as_array()?
        .iter()
        .map(|p| Some(Played { seat: p["seat"].as_u64()? as usize, card: p["card"].as_str()?.to_string() }))
        .collect()
}

fn play_view(m: &Value, game: &Option<GameInfo>) -> Option<PlayView> {
    let tricks = m["tricks"]
        .as_array()?
        .iter()
        .map(|t| {
            Some(Trick {
                leader: uint(&t["leader"])? as usize,
                cards: played(&t["cards"])?,
                winner: uint(&t["winner"])? as usize,
                points: uint(&t["points"])? as u32,
            })
        })
        .collect::<Option<Vec<Trick>>>()?;
    let passed = &m["passed"];
    let received = &m["received"];
    Some(PlayView {
        game: game.clone(),
        seat: uint(&m["seat"])? as usize,
        hand_number: uint(&m["hand_number"])? as u32,
        trick_number: uint(&m["trick_number"])? as u32,
        leader: uint(&m["leader"])? as usize,
        trick: played(&m["trick"])?,
        tricks,
        hand: cards(&m["hand"])?,
        legal: cards(&m["legal"])?,
        hearts_broken: m["hearts_broken"].as_bool()?,
        passed: cards(&passed["cards"]),
        passed_to: uint(&passed["to"]).map(|n| n as usize),
        received: cards(&received["cards"]),
        received_from: uint(&received["from"]).map(|n| n as usize),
        hand_points: nums(&m["hand_points"])?,
        scores: nums(&m["scores"])?,
        time_ms: uint(&m["time_ms"])?,
    })
}

fn three_of_hand(cards: &[Card], hand: &[Card]) -> bool {
    cards.len() == 3 && cards.iter().collect::<HashSet<_>>().len() == 3 && cards.iter().all(|c| hand.contains(c))
}

/// Play on standard input and output: returns on bye or end of input.
pub fn run<S: Strategy>(bot: &mut S) {
    let stdin = io::stdin();
    let stdout = io::stdout();
    play(bot, &mut stdin.lock(), &mut stdout.lock());
}

/// Play on other streams (for tests).
pub fn play<S: Strategy>(bot: &mut S, input: &mut dyn BufRead, output: &mut dyn Write) {
    let mut game: Option<GameInfo> = None;
    let mut scores: Vec<u32> = vec![0, 0, 0, 0];
    let mut buf: Vec<u8> = Vec::new();
    loop {
        buf.clear();
        match input.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return, // end of input: the referee is gone
            Ok(_) => {}
        }
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim_end_matches(|c| c == '\n' || c == '\r');
        if line.trim().is_empty() {
            continue;
        }
        let msg: Value = match serde_json::from_str(line) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                log(&format!("not a JSON object, skipped: {:.80}", line));
                continue;
            }
        };
        let kind = msg["type"].as_str().unwrap_or("");
        let id = &msg["id"];
        let request = !id.is_null();
        let reply = match kind {
            "bye" => return,
            "hello" if request => {
                let mut r = json!({"type": "hello", "id": id, "name": bot.name()});
                if let Some(a) = bot.author() {
                    r["author"] = json!(a);
                }
                if let Some(v) = bot.version() {
                    r["version"] = json!(v);
                }
                Some(r)
            }
            "pass" if request => {
                let view = (|| {
                    Some(PassView {
                        game: game.clone(),
                        hand_number: uint(&msg["hand_number"])? as u32,
                        direction: msg["direction"].as_str()?.to_string(),
                        to: uint(&msg["to"])? as usize,
                        hand: cards(&msg["hand"])?,
                        scores: scores.clone(),
                        time_ms: uint(&msg["time_ms"])?,
                    })
                })();
                view.map(|v| json!({"type": "pass", "id": id, "cards": choose_pass(bot, &v)}))
            }
            "play" if request => {
                play_view(&msg, &game).map(|v| json!({"type": "play", "id": id, "card": choose_play(bot, &v)}))
            }
            "game_start" => {
                game = (|| {
                    Some(GameInfo {
                        game_id: msg["game_id"].as_str()?.to_string(),
                        seat: uint(&msg["seat"])? as usize,
                        players: cards(&msg["players"])?,
                        target_score: uint(&msg["target_score"]).map(|n| n as u32),
                        hands: uint(&msg["hands"]).map(|n| n as u32),
                        seed: msg["seed"].as_i64().unwrap_or(0),
                    })
                })();
                scores = vec![0, 0, 0, 0];
                None
            }
            "deal" => {
                if let Some(s) = nums(&msg["scores"]) {
                    scores = s;
                }
                None
            }
            _ => None, // a notification this kit does not use, or an unknown type
        };
        if request && reply.is_none() && matches!(kind, "pass" | "play") {
            log(&format!("a {} request this kit cannot read, skipped", kind));
        }
        if let Some(r) = reply {
            let _ = writeln!(output, "{}", r);
            let _ = output.flush(); // a pipe is buffered: without this the referee waits in vain
        }
    }
}

fn choose_pass<S: Strategy>(bot: &mut S, view: &PassView) -> Vec<Card> {
    if !bot.fallback() {
        return bot.choose_pass(view);
    }
    match panic::catch_unwind(AssertUnwindSafe(|| bot.choose_pass(view))) {
        Ok(cards) if three_of_hand(&cards, &view.hand) => cards,
        Ok(cards) => {
            log(&format!("choose_pass returned {:?}: not three distinct cards of the hand", cards));
            default_pass(&view.hand)
        }
        Err(_) => {
            log("choose_pass panicked");
            default_pass(&view.hand)
        }
    }
}

fn choose_play<S: Strategy>(bot: &mut S, view: &PlayView) -> Card {
    if !bot.fallback() {
        return bot.choose_play(view);
    }
    match panic::catch_unwind(AssertUnwindSafe(|| bot.choose_play(view))) {
        Ok(card) if view.legal.contains(&card) => card,
        Ok(card) => {
            log(&format!("choose_play returned {:?}, not legal (legal: {})", card, view.legal.join(" ")));
            view.legal[0].clone()
        }
        Err(_) => {
            log("choose_play panicked");
            view.legal[0].clone()
        }
    }
}
