// Plays the first legal card; at its third play request of a game it reads a
// property of undefined: node prints the throw's line, the TypeError, its
// internal frames and its version on stderr, and exits with code 1.
const readline = require("readline");
const rl = readline.createInterface({ input: process.stdin });
let plays = 0;
function send(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}
rl.on("line", (line) => {
  const msg = JSON.parse(line);
  if (msg.type === "game_start") plays = 0;
  if (msg.type === "bye") process.exit(0);
  if (!("id" in msg)) return;
  if (msg.type === "hello") send({ type: "hello", id: msg.id, name: "crash-node" });
  else if (msg.type === "pass") send({ type: "pass", id: msg.id, cards: msg.hand.slice(0, 3) });
  else if (msg.type === "play") {
    plays += 1;
    const seen = plays === 3 ? undefined : { first: msg.legal[0] };
    send({ type: "play", id: msg.id, card: seen.first });
  }
});
