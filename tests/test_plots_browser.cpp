// --plot's pictures in a real browser: each kind (a replay, a tuning,
// --max-batch's answer, a bandwidth sweep) made by gpumem as a user makes
// it, then checked as XML (python3's xml.etree, a strict parser) and in
// headless Chromium by its DOM: parsed as image/svg+xml without error,
// drawn at its declared size, its title, both axes' ticks and titles and
// every legend entry rendered (a text box of some width), no text outside
// the picture, an opaque background under everything, no script and
// nothing loaded from elsewhere. One Chromium run checks every picture;
// `timeout` bounds it, so a browser that hangs fails the case instead of
// the suite. Skipped (exit 77, browser_main.cpp) without Chromium.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chromium.hpp"
#include "cli_harness.hpp"
#include "copy/copy_report.hpp"
#include "record_fixtures.hpp"

namespace {

using nlohmann::json;
using record_fixtures::has;
using record_fixtures::tests_dir;

struct Scratch : record_fixtures::Scratch {
    Scratch() : record_fixtures::Scratch("plots") {}
};

// A picture and what its checks expect of it.
struct Picture {
    std::string name, path;
    std::vector<std::string> title_words;  // each in the title
    std::string x_title, y_title;          // parts of the axes' titles (units included)
    std::size_t legend_entries = 1;        // at least
    std::size_t marks = 0;                 // markers drawn, at least
};

std::string html_unescape(std::string text) {
    const std::pair<const char*, const char*> entities[] = {{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&nbsp;", " "}, {"&amp;", "&"}};
    for (const auto& [from, to] : entities)
        for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + 1)) text.replace(at, std::string(from).size(), to);
    return text;
}

// The page: each picture's text parsed as SVG by the browser's own XML
// parser, put in the document and measured; the results as JSON in #result.
const char* const kCheckScript = R"JS(
const out = {};
for (const [name, source] of Object.entries(SOURCES)) {
  const r = {};
  try {
    const doc = new DOMParser().parseFromString(source, 'image/svg+xml');
    const errors = doc.getElementsByTagName('parsererror');
    if (errors.length) throw new Error('not well-formed: ' + errors[0].textContent);
    const holder = document.createElement('div');
    document.body.appendChild(holder);
    const svg = document.importNode(doc.documentElement, true);
    holder.appendChild(svg);
    const box = svg.getBoundingClientRect();
    r.width = box.width; r.height = box.height;
    r.declared = [parseFloat(svg.getAttribute('width')), parseFloat(svg.getAttribute('height'))];
    const drawn = (e) => { const b = e.getBoundingClientRect(); return b.width > 0 && b.height > 0; };
    const texts = (selector) => [...svg.querySelectorAll(selector)];
    const title = svg.querySelector('#plot-title');
    r.title = title ? title.textContent : null;
    r.title_drawn = !!title && drawn(title);
    const legend = svg.querySelector('#legend');
    r.legend_entries = legend ? legend.querySelectorAll('.legend-entry').length : -1;
    r.legend_drawn = legend ? [...legend.querySelectorAll('.legend-entry')].filter(e => drawn(e.querySelector('text')) && e.children.length >= 2).length : 0;
    r.x_ticks = texts('#x-axis text.tick').filter(drawn).length;
    r.y_ticks = texts('#y-axis text.tick').filter(drawn).length;
    r.axis_titles = texts('.axis-title').filter(drawn).map(t => t.textContent);
    r.series = svg.querySelectorAll('#plot-area .series').length;
    r.marks = svg.querySelectorAll('#markers > *').length;
    r.outside = texts('text').filter(t => {
      const b = t.getBoundingClientRect();
      return b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1 || b.bottom > box.bottom + 1;
    }).map(t => t.textContent);
    const background = svg.querySelector('#background');
    r.background = background ? [background.getBoundingClientRect().width, background.getBoundingClientRect().height,
                                 getComputedStyle(background).fill, background === svg.querySelector('rect')] : null;
    r.scripts = svg.querySelectorAll('script, foreignObject, image, use').length;
    r.links = [...svg.querySelectorAll('*')].filter(e => e.hasAttribute('href') || e.hasAttribute('xlink:href')).length;
  } catch (e) {
    r.error = String(e);
  }
  out[name] = r;
}
document.getElementById('result').textContent = JSON.stringify(out);
)JS";

json check_in_chromium(const std::vector<Picture>& pictures, const Scratch& s) {
    json sources = json::object();
    for (const Picture& p : pictures) sources[p.name] = slurp(p.path);
    std::string data = sources.dump();
    for (std::size_t at = data.find("</"); at != std::string::npos; at = data.find("</", at + 3)) data.replace(at, 2, "<\\/");
    const std::string page = s / "page.html";
    std::ofstream(page) << "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body><pre id=\"result\">not run</pre>\n<script>\n"
                        << "const SOURCES = " << data << ";\n"
                        << kCheckScript << "</script></body></html>\n";
    const RunResult r = run_program("/usr/bin/timeout", {"-k", "5", "120", browser::chromium_binary(), "--headless", "--no-sandbox",
                                                         "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                                                         "--no-default-browser-check", "--user-data-dir=" + (s / "profile"),
                                                         "--dump-dom", "file://" + page});
    INFO("chromium exit ", r.status, "; stderr: ", r.err.substr(0, 2000));
    REQUIRE(r.status == 0);
    const std::string open = "<pre id=\"result\">";
    const std::size_t start = r.out.find(open);
    REQUIRE(start != std::string::npos);
    const std::size_t end = r.out.find("</pre>", start);
    REQUIRE(end != std::string::npos);
    const std::string text = html_unescape(r.out.substr(start + open.size(), end - start - open.size()));
    INFO("result: ", text.substr(0, 2000));
    REQUIRE(text != "not run");
    return json::parse(text);
}

void check_picture(const Picture& p, const json& r) {
    CAPTURE(p.name);
    INFO("measured: ", r.dump());
    REQUIRE(!r.contains("error"));
    CHECK(r["width"].get<double>() == doctest::Approx(r["declared"][0].get<double>()));
    CHECK(r["height"].get<double>() == doctest::Approx(r["declared"][1].get<double>()));
    CHECK(r["width"].get<double>() >= 600);
    CHECK(r["title_drawn"].get<bool>());
    for (const std::string& word : p.title_words) CHECK(has(r["title"].get<std::string>(), word));
    CHECK(r["legend_entries"].get<int>() >= static_cast<int>(p.legend_entries));
    CHECK(r["legend_drawn"] == r["legend_entries"]);
    CHECK(r["x_ticks"].get<int>() >= 2);
    CHECK(r["y_ticks"].get<int>() >= 2);
    REQUIRE(r["axis_titles"].size() == 2);
    CHECK(has(r["axis_titles"][0].get<std::string>(), p.x_title));
    CHECK(has(r["axis_titles"][1].get<std::string>(), p.y_title));
    CHECK(r["series"].get<int>() >= 1);
    CHECK(r["marks"].get<int>() >= static_cast<int>(p.marks));
    CHECK(r["outside"].empty());
    // The opaque background: the first rectangle, as large as the picture, filled white.
    REQUIRE(r["background"].is_array());
    CHECK(r["background"][0].get<double>() == doctest::Approx(r["width"].get<double>()));
    CHECK(r["background"][1].get<double>() == doctest::Approx(r["height"].get<double>()));
    CHECK(r["background"][2] == "rgb(255, 255, 255)");
    CHECK(r["background"][3].get<bool>());
    CHECK(r["scripts"] == 0);
    CHECK(r["links"] == 0);
}

// python3's xml.etree: a strict XML parser, and the root an SVG element.
void check_xml(const std::vector<Picture>& pictures) {
    std::vector<std::string> args = {"-c",
                                     "import sys, xml.etree.ElementTree as ET\n"
                                     "for f in sys.argv[1:]:\n"
                                     "    root = ET.parse(f).getroot()\n"
                                     "    assert root.tag == '{http://www.w3.org/2000/svg}svg', (f, root.tag)\n"
                                     "print('ok')\n"};
    for (const Picture& p : pictures) args.push_back(p.path);
    const RunResult r = run_program("/usr/bin/env", [&] {
        std::vector<std::string> a = {"python3"};
        a.insert(a.end(), args.begin(), args.end());
        return a;
    }());
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(r.out == "ok\n");
}

std::vector<std::string> standin_env(const Scratch& s) {
    const std::string dir = record_fixtures::record_dir();
    return {"PYTHONPATH=" + dir + "/standin", "STANDIN_LOG=" + (s / "log"), "STANDIN_STATS", "STANDIN_SNAPSHOT", "RANK", "WORLD_SIZE",
            "SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF",
            "STANDIN_TORCH_VERSION", "STANDIN_ROLE"};
}

// A copy sweep as copy_sweep_plot draws it, from measured-looking rows:
// where there is no GPU to sweep (this machine), the picture still comes
// from the command's own builder.
void write_synthetic_sweep(const std::string& path) {
    using namespace gpumem;
    using namespace gpumem::cli;
    CopyResults results;
    results.devices.push_back({DeviceId(0), "NVIDIA H200", 4.8e12, 5u, 16u});
    for (const char* flow : {"h2d", "d2h"})
        for (std::uint64_t bytes = 4096; bytes <= (256ULL << 20); bytes *= 4) {
            CopyResult r;
            r.flow = flow;
            r.direction = kCopyDirections.parse(flow);
            r.host_kind = HostMemoryKind::pinned;
            r.bytes = bytes;
            r.iterations = 4;
            const double gbps = 55.0 * static_cast<double>(bytes) / (static_cast<double>(bytes) + 2e6);
            r.seconds = {static_cast<double>(bytes) / (gbps * 1e9)};
            results.rows.push_back(r);
        }
    std::ofstream(path) << render_svg(copy_sweep_plot(results));
}

}  // namespace

TEST_CASE("plots: a replay, a tuning, --max-batch and a bandwidth sweep render in Chromium at their size, with axes and legend") {
    const Scratch s;
    const std::string trace = tests_dir() + "/fixtures/torch/fragmentation_oom.pickle";
    std::vector<Picture> pictures;

    // A replay of a real PyTorch recording, every strategy, under a cap that some run out of memory in.
    const RunResult replay = run_gpumem({"reuse-sim", "replay", "--trace", trace, "--capacity", "40MiB", "--plot", s / "replay.svg"});
    INFO(replay.err);
    REQUIRE(replay.status == 0);
    pictures.push_back({"replay", s / "replay.svg", {"gpumem reuse-sim", "fragmentation_oom.pickle"}, "event", "memory (", 4, 1});

    const RunResult tune =
        run_gpumem({"reuse-sim", "tune", "--trace", trace, "--capacity", "40MiB", "--sweep", "expandable_segments=false,true", "--plot", s / "tune.svg"});
    INFO(tune.err);
    REQUIRE(tune.status == 0);
    pictures.push_back({"tune", s / "tune.svg", {"torch-caching", "settings"}, "event", "memory (", 3, 0});

    // --max-batch end to end: the stand-in torch's program recorded at two batches, its answer confirmed by real runs.
    const std::string program = record_fixtures::record_dir() + "/batch_program.py";
    const RunResult max_batch = run_gpumem({"reuse-sim", "max-batch", "--capacity", "1GiB", "--record-batches", "2,4", "--confirm",
                                            "--plot", s / "max-batch.svg", "--", "python3", program, "--bs", "{batch}"},
                                           standin_env(s));
    INFO(max_batch.err);
    REQUIRE(max_batch.status == 0);
    pictures.push_back({"max_batch", s / "max-batch.svg", {"max-batch", "peak reserved"}, "batch", "peak reserved (", 4, 3});

    // A sweep: the GPU's own where there is one, else the command's builder over synthetic rows.
    const RunResult copy = run_gpumem({"copy", "h2d", "--sizes", "64KiB..16MiB", "--plot", s / "copy.svg"});
    if (copy.status == 3) write_synthetic_sweep(s / "copy.svg");
    else REQUIRE(copy.status == 0);
    pictures.push_back({"copy", s / "copy.svg", {"gpumem copy", "device 0"}, "(bytes, log scale)", "GB/s", 1, 0});
    const RunResult memset = run_gpumem({"memset", "--sizes", "1MiB..64MiB", "--plot", s / "memset.svg"});
    if (memset.status != 3) {
        REQUIRE(memset.status == 0);
        pictures.push_back({"memset", s / "memset.svg", {"gpumem memset", "device 0"}, "(bytes, log scale)", "GB/s", 1, 0});
    }

    check_xml(pictures);
    const json results = check_in_chromium(pictures, s);
    for (const Picture& p : pictures) {
        REQUIRE(results.contains(p.name));
        check_picture(p, results[p.name]);
    }
}

TEST_CASE("plots: a picture that cannot parse is caught by the browser check (the check can fail)") {
    const Scratch s;
    std::ofstream(s / "broken.svg") << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"><g></svg>";
    const json results = check_in_chromium({{"broken", s / "broken.svg", {}, "", "", 0, 0}}, s);
    REQUIRE(results.contains("broken"));
    CHECK(results["broken"].contains("error"));
    CHECK(has(results["broken"]["error"].get<std::string>(), "not well-formed"));
}
