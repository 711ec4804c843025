// Uploads one file with each haste client of package.json, both of the npm registry and written by
// others, to the server named first, as their READMEs show, and prints what each answered: one JSON
// object, client name to the URL it gave. TestHasteClientsFromNPM reads the pastes back.
//   node upload.js http://127.0.0.1:8080 FILE
"use strict";

const fs = require("fs");
const hastebin = require("hastebin"); // createPaste(text, {server, raw}) → the raw URL
const hastebinGen = require("hastebin-gen"); // (text, {url, extension}) → the page URL with the extension

async function main() {
  const [server, file] = process.argv.slice(2);
  const text = fs.readFileSync(file, "utf8");
  const urls = {};
  urls.hastebin = await hastebin.createPaste(text, { server, raw: true });
  urls["hastebin-gen"] = await hastebinGen(text, { url: server, extension: "go" });
  process.stdout.write(JSON.stringify(urls) + "\n");
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack || err) + "\n");
  process.exit(1);
});
