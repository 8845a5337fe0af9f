/* hearts-arena replay player: steps through one game as any seat saw it.
 *
 * Plain JavaScript, no build step, no network: it reads the game from the page's
 * <script type="application/json" id="replay-data"> element (written by arena/report/outputs.py)
 * and draws into <div id="player">. Without JavaScript the page's static tables remain.
 * All text from the record (names, fault details) is set with textContent, never as HTML.
 *
 * A position is {h, t, c}: h the index into data.hands (0-based), t the trick (0 before
 * play), c the card: at t = 0, c = 0 is the deal and c = 1 the pass (pass hands only);
 * at t = 1..13, c = 1..4 is the number of cards played to trick t. A moment in the URL
 * fragment is "#h=HAND&t=TRICK&c=CARD&seat=SEAT" (HAND the 1-based hand number, SEAT 0..3
 * or "open"); "#fault-K" opens at the K-th fault (0-based) as its seat saw it.
 */
(function (root) {
  "use strict";

  var OFFSETS = { left: 1, right: 3, across: 2, hold: 0 };
  /** Most fault buttons in the player (a bot that times out on every move has many). */
  var MAX_FAULT_BUTTONS = 30;
  var SUITS = { C: "\u2663", D: "\u2666", S: "\u2660", H: "\u2665" };
  var ORDER = {};
  "CDSH".split("").forEach(function (s, i) {
    "23456789TJQKA".split("").forEach(function (r, j) { ORDER[r + s] = i * 13 + j; });
  });

  function sortCards(cards) {
    return cards.slice().sort(function (a, b) {
      var x = a in ORDER ? ORDER[a] : 99, y = b in ORDER ? ORDER[b] : 99;
      return x - y;
    });
  }

  function without(cards, gone) {
    return cards.filter(function (c) { return gone.indexOf(c) < 0; });
  }

  /** The pass offset of a hand (R3): receiver = (seat + offset) % 4; 0 for no pass. */
  function passOffset(hand) {
    return hand.passes ? (OFFSETS[hand.dir] || 0) : 0;
  }

  /** Every position of the game, in order. */
  function positions(data) {
    var out = [];
    data.hands.forEach(function (hand, h) {
      out.push({ h: h, t: 0, c: 0 });
      if (passOffset(hand)) out.push({ h: h, t: 0, c: 1 });
      hand.tricks.forEach(function (trick, i) {
        for (var c = 1; c <= trick[1].length; c++) out.push({ h: h, t: i + 1, c: c });
      });
    });
    return out;
  }

  function same(a, b) { return a.h === b.h && a.t === b.t && a.c === b.c; }

  function indexOf(list, pos) {
    for (var i = 0; i < list.length; i++) if (same(list[i], pos)) return i;
    return -1;
  }

  /** Stops of "next/previous trick": each deal, each pass and each completed trick. */
  function isStop(data, pos) {
    if (pos.t === 0) return true;
    return pos.c === data.hands[pos.h].tricks[pos.t - 1][1].length;
  }

  /**
   * What the table looks like at `pos` to `viewer` (0..3, or -1 for all hands open).
   * Returns {hand, direction, trick, card, phase: "deal"|"pass"|"play", seats: [4 x
   * {held: sorted cards or null when not seen, count, known: cards the viewer knows this
   * seat holds (the ones it passed to it, not yet played), points, tricks}], passes: null
   * before the pass or on a hold hand, else [4 x {passed, to, received, from}] with
   * passed/received null where the viewer did not see them, table: [{seat, card, auto}]
   * the cards of the current trick, leader, winner (when the trick is complete, else
   * null), trickPoints, events: [{kind: "fault"|"auto", seat, ...}] at this moment,
   * result: null but at the last card of a hand, then {points: each seat's points of the
   * hand after the moon rule R12, moon: the seat that shot the moon or null, scores: the
   * running totals after the hand, last: true on the game's last hand}}. A seat's points
   * and tricks count every trick completed so far, the one just completed included.
   * The cards it returns are exactly those the viewer knew at that moment.
   */
  function view(data, pos, viewer) {
    var hand = data.hands[pos.h];
    var open = viewer < 0 || viewer > 3;
    var offset = passOffset(hand);
    var passed = pos.t > 0 || pos.c >= 1;
    var held = hand.dealt.map(function (d) { return d.slice(); });
    if (offset && passed) {
      held = held.map(function (d, s) { return without(d, hand.passes[s]); });
      for (var s = 0; s < 4; s++) held[(s + offset) % 4] = held[(s + offset) % 4].concat(hand.passes[s]);
    }
    var playedBy = [[], [], [], []];
    var points = [0, 0, 0, 0], taken = [0, 0, 0, 0];
    var table = [], leader = null, winner = null, trickPoints = 0;
    for (var t = 1; t <= pos.t; t++) {
      var trick = hand.tricks[t - 1];
      var n = t < pos.t ? trick[1].length : pos.c;
      for (var k = 0; k < n; k++) playedBy[(trick[0] + k) % 4].push(trick[1][k]);
      if (n === trick[1].length) {
        points[trick[2]] += trick[3];
        taken[trick[2]] += 1;
      }
      if (t === pos.t) {
        leader = trick[0];
        for (k = 0; k < n; k++) {
          var seat = (trick[0] + k) % 4;
          table.push({ seat: seat, card: trick[1][k], auto: isAutoPlay(data, pos.h, t, seat) });
        }
        if (n === trick[1].length) {
          winner = trick[2];
          trickPoints = trick[3];
        }
      }
    }
    var seats = [];
    for (s = 0; s < 4; s++) {
      var mine = without(held[s], playedBy[s]);
      var known = [];
      if (!open && s !== viewer && offset && passed && (viewer + offset) % 4 === s) {
        known = sortCards(without(hand.passes[viewer], playedBy[s]));
      }
      seats.push({
        held: open || s === viewer ? sortCards(mine) : null,
        count: mine.length,
        known: known,
        points: points[s],
        tricks: taken[s]
      });
    }
    var passes = null;
    if (offset && passed) {
      passes = [];
      for (s = 0; s < 4; s++) {
        var to = (s + offset) % 4, from = (s + 4 - offset) % 4;
        passes.push({
          passed: open || s === viewer ? hand.passes[s].slice() : null,
          to: to,
          received: open || s === viewer ? hand.passes[from].slice() : null,
          from: from,
          auto: isAutoPass(data, pos.h, s)
        });
      }
    }
    var result = null;
    var end = hand.tricks.length;
    if (hand.points && pos.t > 0 && pos.t === end && pos.c === hand.tricks[end - 1][1].length) {
      result = { points: hand.points.slice(), moon: hand.moon === undefined ? null : hand.moon,
        scores: (hand.scores || []).slice(), last: pos.h === data.hands.length - 1 };
    }
    return {
      hand: hand.n,
      direction: hand.dir,
      trick: pos.t,
      card: pos.c,
      phase: pos.t > 0 ? "play" : pos.c ? "pass" : "deal",
      seats: seats,
      passes: passes,
      table: table,
      leader: leader,
      winner: winner,
      trickPoints: trickPoints,
      events: events(data, pos, viewer),
      result: result
    };
  }

  function isAutoPlay(data, h, t, seat) {
    var n = data.hands[h].n;
    return data.auto.plays.some(function (a) { return a[0] === n && a[1] === t && a[2] === seat; });
  }

  function isAutoPass(data, h, seat) {
    var n = data.hands[h].n;
    return data.auto.passes.some(function (a) { return a[0] === n && a[1] === seat; });
  }

  /** Faults and default moves at `pos`; a fault's detail only in its own seat's view or all open. */
  function events(data, pos, viewer) {
    var hand = data.hands[pos.h], out = [];
    data.faults.forEach(function (f, i) {
      if (f.at && f.at[0] === hand.n && f.at[1] === pos.t && f.at[2] === pos.c) {
        var shown = viewer < 0 || viewer > 3 || viewer === f.seat;
        out.push({ kind: "fault", index: i, seat: f.seat, reason: f.reason, request: f.request,
          detail: shown ? f.detail : null });
      }
    });
    var here = out.slice();
    if (pos.t === 0 && pos.c === 1) {
      for (var s = 0; s < 4; s++) if (isAutoPass(data, pos.h, s)) out.push({ kind: "auto", seat: s, cause: cause(data, s, here) });
    } else if (pos.t > 0) {
      var trick = hand.tricks[pos.t - 1], seat = (trick[0] + pos.c - 1) % 4;
      if (isAutoPlay(data, pos.h, pos.t, seat)) out.push({ kind: "auto", seat: seat, cause: cause(data, seat, here) });
    }
    return out;
  }

  /**
   * Why the referee moved for `seat`: {here: true} when the seat's fault is at this very
   * moment (shown beside it), else {why: "crashed"|"struck out"|"failed its handshake",
   * at: [hand, trick, card]} from the seat's first fault that gave the rest of its game to
   * default moves, else null.
   */
  function cause(data, seat, here) {
    if (here.some(function (e) { return e.seat === seat; })) return { here: true };
    for (var i = 0; i < data.faults.length; i++) {
      var f = data.faults[i];
      if (f.seat === seat && f.out && f.at) return { why: f.out, at: f.at };
    }
    return null;
  }

  /** A moment from a URL fragment, or null: {pos, seat} (seat -1 = open). */
  function parseMoment(data, hash) {
    var text = (hash || "").replace(/^#/, "");
    var m = /^fault-(\d+)$/.exec(text);
    if (m) {
      var f = data.faults[Number(m[1])];
      if (!f || !f.at) return null;
      return parseMoment(data, "h=" + f.at[0] + "&t=" + f.at[1] + "&c=" + f.at[2] + "&seat=" + f.seat);
    }
    if (!/(^|&)h=/.test(text)) return null;
    var q = {};
    text.split("&").forEach(function (part) {
      var kv = part.split("=");
      q[kv[0]] = decodeURIComponent(kv[1] || "");
    });
    var h = -1;
    data.hands.forEach(function (hand, i) { if (String(hand.n) === q.h) h = i; });
    if (h < 0) return null;
    var hand = data.hands[h];
    var t = Math.max(0, Math.min(hand.tricks.length, parseInt(q.t, 10) || 0));
    var c = parseInt(q.c, 10) || 0;
    c = t === 0 ? (c >= 1 && passOffset(hand) ? 1 : 0) : Math.max(1, Math.min(hand.tricks[t - 1][1].length, c || 1));
    var seat = /^[0-3]$/.test(q.seat || "") ? Number(q.seat) : -1;
    return { pos: { h: h, t: t, c: c }, seat: seat };
  }

  function momentHash(data, pos, seat) {
    return "#h=" + data.hands[pos.h].n + "&t=" + pos.t + "&c=" + pos.c + "&seat=" + (seat < 0 ? "open" : seat);
  }

  // -- drawing ---------------------------------------------------------------

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  /** A card as people read it: "TH" -> "10\u2665"; other text as it is. */
  function cardText(card) {
    var suit = card.charAt(1);
    if (card.length !== 2 || !SUITS[suit]) return card;
    return (card.charAt(0) === "T" ? "10" : card.charAt(0)) + SUITS[suit];
  }

  function cardEl(card, extra) {
    var suit = card.charAt(1);
    var e = el("span", "card " + (SUITS[suit] ? suit.toLowerCase() : "x") + (extra ? " " + extra : ""));
    e.setAttribute("data-card", card);
    e.textContent = cardText(card);
    return e;
  }

  function backEl() {
    var e = el("span", "card back");
    e.setAttribute("aria-hidden", "true");
    return e;
  }

  function seatLabel(data, s) {
    return "seat " + s + " (" + data.seats[s] + ")";
  }

  /**
   * The player of `data` drawn into `node`. `options` (all optional): history (false: the
   * address keeps its fragment, for a page that is not a replay page), onEnd (called when
   * autoplay reaches the game's last card, instead of only stopping), speeds (a list of
   * [milliseconds a card, label]) and speed (the one chosen first, milliseconds).
   */
  function Player(node, data, options) {
    this.node = node;
    this.data = data;
    this.options = options || {};
    this.list = positions(data);
    this.i = 0;
    this.seat = -1;
    this.timer = null;
    this.build();
  }

  Player.prototype.button = function (label, title, action, cls) {
    var b = el("button", cls || null, label);
    b.type = "button";
    b.title = title;
    b.setAttribute("aria-label", title);
    b.setAttribute("data-action", action);
    var self = this;
    b.addEventListener("click", function () { self.act(action); });
    return b;
  };

  Player.prototype.build = function () {
    var self = this, data = this.data, node = this.node;
    node.textContent = "";
    var bar = el("div", "pl-controls");
    bar.appendChild(this.button("First", "First (Home)", "first"));
    bar.appendChild(this.button("\u25C0\u25C0 trick", "Previous trick (Shift+\u2190 or Page Up)", "prev-trick"));
    bar.appendChild(this.button("\u25C0 card", "Previous card (\u2190)", "prev"));
    bar.appendChild(this.button("card \u25B6", "Next card (\u2192)", "next"));
    bar.appendChild(this.button("trick \u25B6\u25B6", "Next trick (Shift+\u2192 or Page Down)", "next-trick"));
    bar.appendChild(this.button("Last", "Last (End)", "last"));
    this.playButton = this.button("Play", "Autoplay (P)", "play", "pl-play");
    bar.appendChild(this.playButton);
    var speedLabel = el("label", "pl-speed", "Speed ");
    this.speed = el("select");
    this.speed.setAttribute("data-control", "speed");
    var speeds = this.options.speeds || [["2000", "slow (2 s a card)"], ["1000", "normal (1 s)"], ["400", "fast (0.4 s)"], ["150", "fastest"]];
    speeds.forEach(function (o) {
      var opt = el("option", null, o[1]);
      opt.value = String(o[0]);
      self.speed.appendChild(opt);
    });
    this.speed.value = String(this.options.speed || 1000);
    if (!this.speed.value) this.speed.value = String(speeds[0][0]);
    this.speed.addEventListener("change", function () {
      self.speed.blur(); // give the arrow keys back to the player
      if (self.timer) { self.stop(); self.start(); }
    });
    speedLabel.appendChild(this.speed);
    bar.appendChild(speedLabel);
    var handLabel = el("label", "pl-hand", "Hand ");
    this.handSelect = el("select");
    this.handSelect.setAttribute("data-control", "hand");
    data.hands.forEach(function (hand, h) {
      var opt = el("option", null, hand.n + " \u00b7 pass " + hand.dir);
      opt.value = String(h);
      self.handSelect.appendChild(opt);
    });
    this.handSelect.addEventListener("change", function () {
      self.handSelect.blur();
      self.go(indexOf(self.list, { h: Number(self.handSelect.value), t: 0, c: 0 }));
    });
    handLabel.appendChild(this.handSelect);
    bar.appendChild(handLabel);
    node.appendChild(bar);

    var seats = el("div", "pl-seats");
    seats.setAttribute("role", "group");
    seats.setAttribute("aria-label", "Whose view");
    seats.appendChild(el("span", null, "View:"));
    this.seatButtons = [];
    for (var s = -1; s < 4; s++) {
      var b = this.button(s < 0 ? "all hands open" : "as " + seatLabel(data, s) + " saw it",
        s < 0 ? "All hands open" : "What seat " + s + " knew", "seat-" + (s < 0 ? "open" : s));
      b.setAttribute("aria-pressed", "false");
      this.seatButtons.push(b);
      seats.appendChild(b);
    }
    node.appendChild(seats);

    this.status = el("p", "pl-status");
    this.status.setAttribute("aria-live", "polite");
    node.appendChild(this.status);
    this.link = el("a", "pl-link", "link to this moment");
    this.link.title = "The address of this moment and view, to copy or share";
    this.table = el("div", "pl-table");
    node.appendChild(this.table);
    this.events = el("div", "pl-events");
    node.appendChild(this.events);
    if (data.faults.length) {
      var list = el("p", "pl-faults", "Faults: "), shown = 0;
      data.faults.forEach(function (f, i) {
        if (!f.at || shown >= MAX_FAULT_BUTTONS) return;
        shown += 1;
        var b = self.button("seat " + f.seat + " " + f.reason + ", hand " + f.at[0] +
          (f.at[1] ? " trick " + f.at[1] : f.at[2] ? " pass" : ""), "Go to this fault", "fault-" + i, "pl-fault-link");
        list.appendChild(b);
      });
      if (data.faults.length > shown) {
        list.appendChild(el("span", null, " and " + (data.faults.length - shown) + " more in the Faults table below"));
      }
      node.appendChild(list);
    }
    var foot = el("p", "pl-keys");
    if (this.options.history !== false) {
      foot.appendChild(this.link);
      node.appendChild(foot);
    }
    node.appendChild(el("p", "pl-keys",
      "Keys: \u2190 \u2192 card, Shift+\u2190 \u2192 or Page Up/Down trick, Home/End first/last, P autoplay, 0\u20133 a seat's view, O all open."));
  };

  Player.prototype.act = function (action) {
    var list = this.list, i = this.i, data = this.data, j;
    if (action === "first") this.go(0);
    else if (action === "last") this.go(list.length - 1);
    else if (action === "next") this.go(Math.min(list.length - 1, i + 1));
    else if (action === "prev") this.go(Math.max(0, i - 1));
    else if (action === "next-trick") {
      for (j = i + 1; j < list.length && !isStop(data, list[j]); j++);
      this.go(Math.min(j, list.length - 1));
    } else if (action === "prev-trick") {
      for (j = i - 1; j > 0 && !isStop(data, list[j]); j--);
      this.go(Math.max(j, 0));
    } else if (action === "play") {
      if (this.timer) this.stop(); else this.start();
    } else if (action.indexOf("seat-") === 0) {
      var s = action.slice(5);
      this.setSeat(s === "open" ? -1 : Number(s));
    } else if (action.indexOf("fault-") === 0) {
      var m = parseMoment(data, action);
      if (m) { this.seat = m.seat; this.go(indexOf(list, m.pos)); }
    }
  };

  Player.prototype.start = function () {
    var self = this;
    if (this.i >= this.list.length - 1) this.go(0);
    this.timer = setInterval(function () {
      if (self.i < self.list.length - 1) self.go(self.i + 1, true);
      else {
        self.stop();
        if (self.options.onEnd) self.options.onEnd(self);
      }
    }, Number(this.speed.value) || 1000);
    this.playButton.textContent = "Pause";
    this.playButton.setAttribute("aria-pressed", "true");
  };

  Player.prototype.stop = function () {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.playButton.textContent = "Play";
    this.playButton.setAttribute("aria-pressed", "false");
  };

  Player.prototype.setSeat = function (seat) {
    this.seat = seat;
    // Keep the static tables below in the same view (their CSS radio switch).
    var radio = document.getElementById(seat < 0 ? "view-open" : "view-" + seat);
    if (radio) radio.checked = true;
    this.render();
  };

  Player.prototype.go = function (i, auto) {
    if (!auto) this.stop();
    if (i >= 0) this.i = i;
    this.render();
  };

  Player.prototype.render = function () {
    var data = this.data, pos = this.list[this.i], seat = this.seat;
    var v = view(data, pos, seat);
    var node = this.node;
    node.setAttribute("data-hand", String(v.hand));
    node.setAttribute("data-trick", String(v.trick));
    node.setAttribute("data-card", String(v.card));
    node.setAttribute("data-seat", seat < 0 ? "open" : String(seat));
    this.handSelect.value = String(pos.h);
    this.seatButtons.forEach(function (b, k) { b.setAttribute("aria-pressed", String(k - 1 === seat)); });

    var text = "Hand " + v.hand + " \u00b7 pass " + v.direction + " \u00b7 ";
    if (v.phase === "deal") text += "the deal";
    else if (v.phase === "pass") text += "the pass";
    else {
      var last = v.table[v.table.length - 1];
      text += "trick " + v.trick + ", card " + v.card + ": " + seatLabel(data, last.seat) + " played " + cardText(last.card) + (last.auto ? " (a default move)" : "");
      if (v.winner !== null) text += "; " + seatLabel(data, v.winner) + " takes the trick, " + v.trickPoints + " point" + (v.trickPoints === 1 ? "" : "s");
    }
    this.status.textContent = text;

    var table = this.table;
    table.textContent = "";
    var bottom = seat < 0 ? 0 : seat;
    var places = ["south", "west", "north", "east"];
    for (var k = 0; k < 4; k++) {
      var s = (bottom + k) % 4, info = v.seats[s];
      var box = el("div", "pl-seat pl-" + places[k] + (s === seat ? " pl-me" : ""));
      box.setAttribute("data-seat", String(s));
      var head = el("div", "pl-name");
      head.appendChild(el("strong", null, "Seat " + s + " "));
      head.appendChild(el("span", null, data.seats[s]));
      head.appendChild(el("small", null, " \u00b7 " + info.points + " pt" + (info.points === 1 ? "" : "s") +
        " in " + info.tricks + " trick" + (info.tricks === 1 ? "" : "s") + " \u00b7 " + info.count + " cards"));
      box.appendChild(head);
      var cards = el("div", "pl-hand-cards");
      if (info.held) info.held.forEach(function (c) { cards.appendChild(cardEl(c)); });
      else {
        info.known.forEach(function (c) { cards.appendChild(cardEl(c, "known")); });
        for (var b = info.known.length; b < info.count; b++) cards.appendChild(backEl());
      }
      box.appendChild(cards);
      if (v.passes && v.passes[s].passed) {
        var p = v.passes[s], line = el("div", "pl-pass");
        line.appendChild(el("span", null, "passed " + (p.auto ? "(default move) " : "")));
        p.passed.forEach(function (c) { line.appendChild(cardEl(c)); });
        line.appendChild(el("span", null, " \u2192 seat " + p.to + "; received "));
        p.received.forEach(function (c) { line.appendChild(cardEl(c)); });
        line.appendChild(el("span", null, " \u2190 seat " + p.from));
        box.appendChild(line);
      }
      table.appendChild(box);
    }
    var center = el("div", "pl-center");
    v.table.forEach(function (t) {
      var k = (t.seat - bottom + 4) % 4;
      var slot = el("div", "pl-slot pl-" + places[k]);
      var c = cardEl(t.card, (t.seat === v.leader ? "lead" : "") + (t.seat === v.winner ? " win" : "") + (t.auto ? " auto" : ""));
      slot.appendChild(c);
      if (t.auto) slot.appendChild(el("sup", "auto-mark", "d"));
      center.appendChild(slot);
    });
    if (!v.table.length) center.appendChild(el("div", "pl-slot pl-note", v.phase === "deal" ? "dealt" : v.phase === "pass" ? "after the pass" : ""));
    table.appendChild(center);

    var ev = this.events;
    ev.textContent = "";
    v.events.forEach(function (e) {
      var p = el("p", e.kind === "fault" ? "pl-fault" : "pl-auto");
      if (e.kind === "fault") {
        p.appendChild(el("strong", null, "Fault: " + seatLabel(data, e.seat) + ", " + e.reason +
          (e.request ? " (" + e.request + " request)" : "")));
        p.appendChild(el("span", "pl-detail", e.detail !== null ? " \u2014 " + e.detail : " \u2014 detail shown only in seat " + e.seat + "'s view or all open"));
      } else {
        var text = "A default move: the referee " + (pos.t ? "played" : "passed") + " for " + seatLabel(data, e.seat);
        var c = e.cause;
        if (c && c.here) text += ", after its fault above";
        else if (c) {
          text += ", which " + c.why + (c.why === "failed its handshake" ? "" : " at hand " + c.at[0] +
            (c.at[1] ? ", trick " + c.at[1] : c.at[2] ? ", the pass" : ", before play")) +
            ": the referee makes its moves for the rest of the game";
        }
        p.textContent = text + ".";
      }
      ev.appendChild(p);
    });
    if (v.result) {
      var r = v.result, line = "Hand " + v.hand + " over: ";
      if (r.moon !== null) line += seatLabel(data, r.moon) + " shot the moon (R12): 0 points for it, 26 for each other seat; ";
      line += "points " + r.points.join(" \u00b7 ") + "; totals " + r.scores.join(" \u00b7 ");
      ev.appendChild(el("p", "pl-result", line + (r.last ? ". The game is over." : ".")));
    }
    this.link.href = momentHash(data, pos, seat);
    if (this.options.history === false) return;
    try {
      history.replaceState(null, "", momentHash(data, pos, seat));
    } catch (err) { /* some browsers refuse it on file:// pages; the moment is still shown */ }
  };

  Player.prototype.open = function (hash) {
    var m = parseMoment(this.data, hash);
    if (!m) return false;
    this.seat = m.seat;
    var radio = document.getElementById(m.seat < 0 ? "view-open" : "view-" + m.seat);
    if (radio) radio.checked = true;
    this.go(indexOf(this.list, m.pos));
    return true;
  };

  Player.prototype.key = function (e) {
    var t = e.target;
    if (e.ctrlKey || e.altKey || e.metaKey) return;
    if (t && (t.tagName === "INPUT" && t.type !== "radio" || t.tagName === "SELECT" || t.tagName === "TEXTAREA" || t.isContentEditable)) return;
    var map = { ArrowRight: e.shiftKey ? "next-trick" : "next", ArrowLeft: e.shiftKey ? "prev-trick" : "prev",
      PageDown: "next-trick", PageUp: "prev-trick", Home: "first", End: "last", p: "play", P: "play",
      o: "seat-open", O: "seat-open", 0: "seat-0", 1: "seat-1", 2: "seat-2", 3: "seat-3" };
    var action = map[e.key];
    if (!action) return;
    e.preventDefault();
    this.act(action);
  };

  function start() {
    var node = document.getElementById("player");
    var source = document.getElementById("replay-data");
    if (!node || !source) return null;
    var data = JSON.parse(source.textContent);
    if (!data.hands.length) return null;
    var player = new Player(node, data);
    if (!player.open(location.hash)) {
      var checked = document.querySelector(".view-radio:checked");
      player.seat = checked && /^view-[0-3]$/.test(checked.id) ? Number(checked.id.slice(5)) : -1;
      player.render();
    }
    node.hidden = false;
    if (/^#(h=|fault-)/.test(location.hash)) node.scrollIntoView();
    document.addEventListener("keydown", function (e) { player.key(e); });
    window.addEventListener("hashchange", function () { if (player.open(location.hash)) node.scrollIntoView(); });
    // A moment link on this page (the faults table) opens the player even when
    // the address already holds that fragment (no hashchange event then).
    document.querySelectorAll("a.moment").forEach(function (a) {
      a.addEventListener("click", function (e) {
        if (player.open(a.hash)) { e.preventDefault(); node.scrollIntoView(); }
      });
    });
    document.querySelectorAll(".view-radio").forEach(function (r) {
      r.addEventListener("change", function () {
        if (r.checked) player.setSeat(r.id === "view-open" ? -1 : Number(r.id.slice(5)));
      });
    });
    return player;
  }

  root.HeartsReplay = { positions: positions, view: view, parseMoment: parseMoment, momentHash: momentHash, start: start,
    Player: Player, cardText: cardText };
  if (typeof document !== "undefined") {
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", function () { root.HeartsReplay.player = start(); });
    } else {
      root.HeartsReplay.player = start();
    }
  }
})(typeof window !== "undefined" ? window : this);
