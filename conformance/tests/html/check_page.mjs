// Opens the conformance matrix page in headless Chromium and reports what a person would
// see, as JSON on standard output; conformance/tests/runner_html.rs judges it.
//   node check_page.mjs PAGE.html CHROMIUM TAG PRODUCER IMPLEMENTATION
import { chromium } from "playwright-core";
import { pathToFileURL } from "node:url";

const [page_path, executable, tag, producer, implementation] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: executable, args: ["--no-sandbox"] });
const page = await browser.newPage();
const errors = [];
page.on("console", (m) => { if (m.type() === "error") errors.push("console: " + m.text()); });
page.on("pageerror", (e) => errors.push("page: " + e.message));
page.on("requestfailed", (r) => errors.push("request: " + r.url()));
await page.goto(pathToFileURL(page_path).href);
await page.waitForSelector("body[data-ready='1']");

async function view() {
  return page.evaluate(() => ({
    errors: document.body.dataset.errors || "",
    verdict: document.getElementById("verdict").textContent,
    totals: document.getElementById("totals").textContent,
    checks_count: Number(document.getElementById("totals").dataset.checks),
    header: [...document.querySelectorAll("#matrix thead th")].map((t) => t.textContent),
    rows: [...document.querySelectorAll("#matrix tbody tr")].map((tr) => ({
      producer: tr.dataset.producer,
      cells: [...tr.querySelectorAll("td.cell")].map((td) => td.textContent),
    })),
    writers: [...document.querySelectorAll("#writers tbody tr")].map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)),
    listed: [...document.querySelectorAll("#checks li.check")].map((li) => ({
      status: li.dataset.status,
      title: li.querySelector("strong").textContent,
      detail: li.querySelector("pre.detail")?.textContent ?? null,
      reason: li.querySelector(".reason em")?.textContent ?? null,
      repro: li.querySelector("code.repro").textContent,
    })),
    filters: Object.fromEntries([...document.querySelectorAll("#filters select")].map((s) => [s.name, s.value])),
    hash: location.hash,
  }));
}

const out = {};
out.initial = await view();
await page.selectOption("#filter-status", "fail");
out.status_fail = await view();
await page.click("#filter-reset");
await page.selectOption("#filter-tag", tag);
out.tag = await view();
await page.click("#filter-reset");
await page.click(`#matrix tr[data-producer="${producer}"] td[data-implementation="${implementation}"]`);
out.clicked_cell = await view();
await page.click("#filter-reset");
out.cleared = await view();
out.errors = errors;
await browser.close();
console.log(JSON.stringify(out));
