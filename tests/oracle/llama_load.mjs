// llama_load.mjs - loads llama.cpp v0.5.0 (node-llama-cpp 3.22.1, CPU prebuilt) for the
// oracle scripts and says which CPU library it runs on.
//
// Packages come from $G4_ORACLE_MODULES/node_modules when that is set (a pinned view made by
// tests/sh/oracle_pin.inc, run with NODE_PRESERVE_SYMLINKS=1), else from tests/oracle/node_modules.
// llama.cpp picks one libggml-cpu-<variant>.so of the binaries folder at load (the highest
// ggml_backend_score()); its log line "load_backend: loaded CPU backend from PATH" is caught
// here whatever the log level, and loadLlama's result carries the file name as cpuBackend
// (null if the line never came; it comes at the debug log level, so loading runs at that level and
// the level is then set to logLevel, default error). With report set, it also goes to stderr as
//   oracle: llama.cpp CPU backend libggml-cpu-haswell.so
// for the shell tests to check the pair they compare.
import {createRequire} from "node:module";
import path from "node:path";
import process from "node:process";

const here = path.dirname(new URL(import.meta.url).pathname);

export async function loadLlama({verbose = false, logger = null, logLevel = null, report = true, maxThreads} = {}) {
    const root = process.env.G4_ORACLE_MODULES;
    const req = createRequire(root ? path.join(path.resolve(root), "index.js") : path.join(here, "package.json"));
    let modPath;
    try { modPath = req.resolve("node-llama-cpp"); }
    catch { throw new Error("node-llama-cpp is not installed in " + (root ?? here)); }
    const {getLlama, LlamaLogLevel} = await import(modPath);
    let cpuBackend = null;
    const llama = await getLlama({
        gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true, progressLogs: false,
        ...(maxThreads === undefined ? {} : {maxThreads}),
        logLevel: LlamaLogLevel.debug, // the load line only comes at this level; lowered below
        logger(level, message) {
            const m = /loaded CPU backend from (\S+)/.exec(message);
            if (m && cpuBackend === null) cpuBackend = path.basename(m[1]);
            if (logger) logger(level, message);
            else if (verbose || level === "error" || level === "fatal")
                process.stderr.write("[llama] " + message + (message.endsWith("\n") ? "" : "\n"));
        },
    });
    // the addon hands its log lines over asynchronously: give the load line a moment to arrive
    for (let i = 0; i < 100 && cpuBackend === null; i++) await new Promise(r => setTimeout(r, 10));
    llama.logLevel = verbose ? LlamaLogLevel.debug : (logLevel ?? LlamaLogLevel.error);
    if (report) process.stderr.write("oracle: llama.cpp CPU backend " + (cpuBackend ?? "unknown") + "\n");
    return {llama, LlamaLogLevel, cpuBackend};
}
