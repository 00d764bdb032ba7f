// Preloaded into the conformance suite (`node --import`). Its scenario servers call
// `listen(0)`, which binds every interface; this makes a listen without a host bind
// 127.0.0.1 only, so a run opens nothing beyond the loopback interface.
//
// Node looks a given host up before binding, asynchronously, while the suite reads
// `server.address().port` right after `listen` returns; so during our own `listen` call the
// lookup of the loopback literal answers at once, and the bind stays synchronous as before.
import dns from "node:dns";
import net from "node:net";

const LOOPBACK = "127.0.0.1";
const listen = net.Server.prototype.listen;
const lookup = dns.lookup;
let binding = false;

dns.lookup = function (hostname, options, callback) {
  if (binding && hostname === LOOPBACK) {
    const done = typeof options === "function" ? options : callback;
    const all = typeof options === "object" && options !== null && options.all;
    return all ? done(null, [{ address: LOOPBACK, family: 4 }]) : done(null, LOOPBACK, 4);
  }
  return lookup.apply(this, arguments);
};

net.Server.prototype.listen = function (...args) {
  const [first] = args;
  if (args.length === 0 || typeof first === "function") {
    args.unshift(0, LOOPBACK);
  } else if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    if (typeof args[1] !== "string") args.splice(1, 0, LOOPBACK);
  } else if (first && typeof first === "object" && first.path === undefined && !first.host) {
    args[0] = { ...first, host: LOOPBACK };
  }
  binding = true;
  try {
    return listen.apply(this, args);
  } finally {
    binding = false;
  }
};
