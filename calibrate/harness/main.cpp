// moesim-calibrate: measures the collectives, GEMMs and memory-bound kernels of an MoE training
// step on the GPUs of one node and writes them as a versioned JSON document for the fitter.
// Exit codes: 0 complete, 1 a CUDA/NCCL/cuBLAS failure (results so far written), 2 bad command
// line or shapes file, 3 no CUDA device (environment written), 4 interrupted (results written).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>

#include "budget.hpp"
#include "cli.hpp"
#include "context.hpp"
#include "environment.hpp"
#include "errors.hpp"
#include "groups.hpp"
#include "measurements_writer.hpp"
#include "report_table.hpp"
#include "shapes.hpp"
#include "timing.hpp"

using namespace moesim::cal;

namespace {

extern "C" void on_signal(int) { request_stop(); }

void print_run_banner(const Context& ctx, const Options& o, const json::Value& env) {
    std::printf("# moesim-calibrate on %s, %s UTC\n", env.find("hostname")->as_string().c_str(),
                env.find("date_utc")->as_string().c_str());
    std::printf("# NCCL %s, cuBLAS %s, CUDA runtime %s, driver %s\n", env.find("nccl_version")->as_string().c_str(),
                env.find("cublas_version")->as_string().c_str(), env.find("cuda_runtime_version")->as_string().c_str(),
                env.find("driver_version")->as_string().c_str());
    for (const auto& d : env.find("devices")->as_array())
        std::printf("#   GPU %lld: %s, %lld SMs, %lld MiB, bus %s\n", static_cast<long long>(d.find("index")->as_int()),
                    d.find("name")->as_string().c_str(), static_cast<long long>(d.find("sm_count")->as_int()),
                    static_cast<long long>(d.find("memory_bytes")->as_int() >> 20),
                    d.find("pci_bus_id")->as_string().c_str());
    std::printf("# group size %d (%d process%s, %d node%s)%s\n", ctx.world, ctx.proc_count,
                ctx.proc_count > 1 ? "es" : "", ctx.node_count, ctx.node_count > 1 ? "s" : "",
                ctx.world == 1 ? ": collectives run on one rank (NCCL local copies), send/recv skipped" : "");
    std::printf("# budget %s, iters %d, warmup %d%s\n",
                o.budget_s > 0 ? (std::to_string(static_cast<int>(o.budget_s)) + " s").c_str() : "unlimited", o.iters,
                o.warmup, o.quick ? ", quick sweep" : "");
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    Options opts;
    Shapes shapes;
    try {
        opts = parse_options(argc, argv);
        if (opts.help) {
            std::printf("%s", usage_text().c_str());
            return 0;
        }
        shapes = opts.shapes_file.empty() ? default_shapes() : load_shapes(opts.shapes_file);
        if (!opts.write_default_shapes.empty()) {
            std::ofstream out(opts.write_default_shapes);
            out << json::dump(shapes_to_json(default_shapes()));
            if (!out.good()) throw HarnessError("cannot write " + opts.write_default_shapes);
            std::printf("wrote %s\n", opts.write_default_shapes.c_str());
            return 0;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "moesim-calibrate: %s\n", e.what());
        return 2;
    }
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    if (!opts.inject_measurement.empty()) inject_failure(opts.inject_library, opts.inject_measurement);

    MeasurementsWriter out(opts.output, tool_info(opts.argv), collect_environment(nullptr));
    out.set_shapes(shapes_to_json(shapes));
    std::string why;
    if (visible_device_count(why) == 0) {
        out.set_status("no_device", "no CUDA device: " + why);
        out.flush();
        std::fprintf(stderr,
                     "moesim-calibrate: no CUDA device (%s); wrote %s with the environment and no measurements\n",
                     why.c_str(), opts.output.c_str());
        return 3;
    }

    std::unique_ptr<Context> ctx;
    Budget budget(opts.budget_s, opts.groups);
    try {
        ctx = std::make_unique<Context>(&argc, &argv);
        const json::Value env = collect_environment(ctx.get());
        out.set_environment(env);
        if (ctx->root()) print_run_banner(*ctx, opts, env);
        PointTimer timer(*ctx, opts, budget);
        GroupEnv genv{*ctx, opts, budget, timer, out, shapes, ""};
        for (const auto& group : opts.groups) {
            if (stop_requested()) {
                budget.begin_group(group);
                budget.skip(group, "interrupted");
                budget.end_group();
                continue;
            }
            if (ctx->root()) print_banner("group " + group);
            budget.begin_group(group);
            genv.group = group;
            {
                MeasurementScope scope(group);
                run_group(group, genv);
            }
            budget.end_group();
            out.set_budget(budget.to_json());
            if (ctx->root()) out.flush();  // keep what is taken even if the run is killed later
        }
        const bool interrupted = stop_requested();
        out.set_budget(budget.to_json());
        out.set_status(interrupted ? "interrupted" : "complete");
        if (ctx->root() && !out.flush()) return 1;
        if (ctx->root())
            std::printf("\n# %s: %zu measurements written to %s in %.1f s\n", interrupted ? "interrupted" : "done",
                        out.count(), opts.output.c_str(), budget.elapsed_s());
        ctx->shutdown();
        return interrupted ? 4 : 0;
    } catch (const std::exception& e) {
        budget.end_group();
        out.set_budget(budget.to_json());
        out.set_status("failed", e.what());
        const bool wrote = (!ctx || ctx->root()) ? out.flush() : false;
        std::fprintf(stderr, "moesim-calibrate: error: %s\n", e.what());
        if (wrote)
            std::fprintf(stderr, "moesim-calibrate: %zu measurements taken before the failure written to %s\n",
                         out.count(), opts.output.c_str());
        std::fflush(stdout);
        std::fflush(stderr);
        if (ctx) ctx->abort_run();
        std::_Exit(1);  // skip destructors: NCCL and CUDA state may be broken
    }
}
