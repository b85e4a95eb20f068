// Compiles every .ksy in KSY_DIR to Python modules in OUT_DIR with the
// Kaitai Struct compiler library: node compile.js KSY_DIR OUT_DIR
"use strict";
const fs = require("fs");
const path = require("path");
const yaml = require("js-yaml");
const KaitaiStructCompiler = require("kaitai-struct-compiler");

async function main() {
  const [ksyDir, outDir] = process.argv.slice(2);
  if (!ksyDir || !outDir) {
    console.error("usage: node compile.js KSY_DIR OUT_DIR");
    process.exit(2);
  }
  const compiler =
    typeof KaitaiStructCompiler === "function" ? new KaitaiStructCompiler() : KaitaiStructCompiler;
  fs.mkdirSync(outDir, { recursive: true });
  const names = fs.readdirSync(ksyDir).filter((n) => n.endsWith(".ksy")).sort();
  let failed = 0;
  for (const name of names) {
    const ksy = yaml.load(fs.readFileSync(path.join(ksyDir, name), "utf8"));
    try {
      const files = await compiler.compile("python", ksy, null, false);
      for (const [file, text] of Object.entries(files)) {
        fs.writeFileSync(path.join(outDir, file), text);
      }
      console.log(`compiled ${name} -> ${Object.keys(files).join(", ")}`);
    } catch (err) {
      failed += 1;
      console.error(`error: ${name}: ${err && err.message ? err.message : err}`);
      if (err && err.s$1) console.error(String(err.s$1));
    }
  }
  console.log(`compiler ${compiler.version}: ${names.length - failed} of ${names.length} compiled`);
  process.exit(failed === 0 ? 0 : 1);
}

main();
