// Strict reading and writing of the shapes file (schema moesim-shapes/1, see README.md).
#include "shapes.hpp"

#include <fstream>
#include <set>
#include <sstream>

#include "errors.hpp"

namespace moesim::cal {

const char* layout_name(Layout l) {
    switch (l) {
        case Layout::Fwd: return "fwd";
        case Layout::Dgrad: return "dgrad";
        case Layout::Wgrad: return "wgrad";
    }
    return "?";
}

namespace {

// Reads one JSON object, remembering which keys were used; finish() rejects the rest.
class ObjectReader {
  public:
    ObjectReader(const json::Value& v, std::string path) : v_(v), path_(std::move(path)) {
        if (!v.is_object()) fail(path_, "must be an object");
    }
    [[noreturn]] static void fail(const std::string& path, const std::string& what) {
        throw HarnessError("shapes: " + path + " " + what);
    }
    const json::Value* get(const std::string& key) {
        used_.insert(key);
        return v_.find(key);
    }
    std::string sub(const std::string& key) const { return path_ + "." + key; }
    std::int64_t integer(const std::string& key, std::int64_t lo, std::int64_t def, bool required) {
        const json::Value* x = get(key);
        if (!x) {
            if (required) fail(sub(key), "is required");
            return def;
        }
        if (!x->is_int() || x->as_int() < lo) fail(sub(key), "must be an integer >= " + std::to_string(lo));
        return x->as_int();
    }
    std::string string(const std::string& key, const std::string& def) {
        const json::Value* x = get(key);
        if (!x) return def;
        if (!x->is_string()) fail(sub(key), "must be a string");
        return x->as_string();
    }
    const json::Value* array(const std::string& key) {
        const json::Value* x = get(key);
        if (x && !x->is_array()) fail(sub(key), "must be an array");
        return x;
    }
    void finish() const {
        for (const auto& m : v_.members())
            if (!used_.count(m.first)) fail(sub(m.first), "is not a known key");
    }
    const std::string& path() const { return path_; }

  private:
    const json::Value& v_;
    std::string path_;
    std::set<std::string> used_;
};

Layout parse_layout(const std::string& s, const std::string& path) {
    if (s == "fwd") return Layout::Fwd;
    if (s == "dgrad") return Layout::Dgrad;
    if (s == "wgrad") return Layout::Wgrad;
    ObjectReader::fail(path, "must be one of fwd, dgrad, wgrad (got '" + s + "')");
}

GemmShape parse_gemm(const json::Value& v, const std::string& path) {
    ObjectReader r(v, path);
    GemmShape g;
    g.name = r.string("name", "");
    g.m = r.integer("m", 1, 0, true);
    g.n = r.integer("n", 1, 0, true);
    g.k = r.integer("k", 1, 0, true);
    g.layout = parse_layout(r.string("layout", "fwd"), r.sub("layout"));
    g.count = r.integer("count", 0, 1, false);
    r.finish();
    return g;
}

std::vector<double> parse_doubles(const json::Value* a, const std::string& path) {
    std::vector<double> out;
    if (!a) return out;
    for (std::size_t i = 0; i < a->as_array().size(); ++i) {
        const auto& x = a->as_array()[i];
        if (!x.is_number() || x.as_double() < 0)
            ObjectReader::fail(path + "[" + std::to_string(i) + "]", "must be a number >= 0");
        out.push_back(x.as_double());
    }
    return out;
}

void parse_grouped(const json::Value& v, GroupedGemmConfig& g, const std::string& path) {
    ObjectReader r(v, path);
    g.tokens = r.integer("tokens", 1, g.tokens, false);
    g.experts = r.integer("experts", 1, g.experts, false);
    g.top_k = r.integer("top_k", 1, g.top_k, false);
    if (g.top_k > g.experts) ObjectReader::fail(r.sub("top_k"), "must not exceed experts");
    g.seed = static_cast<std::uint64_t>(r.integer("seed", 0, static_cast<std::int64_t>(g.seed), false));
    if (const auto* z = r.array("zipf_s")) g.zipf_s = parse_doubles(z, r.sub("zipf_s"));
    if (const auto* a = r.array("gemms")) {
        g.gemms.clear();
        for (std::size_t i = 0; i < a->as_array().size(); ++i) {
            const std::string p = r.sub("gemms") + "[" + std::to_string(i) + "]";
            ObjectReader e(a->as_array()[i], p);
            GroupedGemmShape s;
            s.name = e.string("name", "");
            s.layout = parse_layout(e.string("layout", "fwd"), e.sub("layout"));
            int rows_fields = 0;
            for (const char* dim : {"m", "n", "k"}) {
                const json::Value* x = e.get(dim);
                if (!x) ObjectReader::fail(e.sub(dim), "is required");
                if (x->is_string() && x->as_string() == "rows") {
                    s.rows_dim = dim[0];
                    ++rows_fields;
                    continue;
                }
                if (!x->is_int() || x->as_int() < 1)
                    ObjectReader::fail(e.sub(dim), "must be an integer >= 1 or the string \"rows\"");
                (dim[0] == 'm' ? s.m : dim[0] == 'n' ? s.n : s.k) = x->as_int();
            }
            if (rows_fields != 1 || s.rows_dim == 'n')
                ObjectReader::fail(p, "needs exactly one of m or k set to \"rows\"");
            e.finish();
            g.gemms.push_back(s);
        }
    }
    r.finish();
}

std::vector<std::int64_t> parse_sizes(const json::Value* a, const std::string& path) {
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < a->as_array().size(); ++i) {
        const auto& x = a->as_array()[i];
        if (!x.is_int() || x.as_int() < 4)
            ObjectReader::fail(path + "[" + std::to_string(i) + "]", "must be an integer >= 4 (bytes)");
        out.push_back(x.as_int());
    }
    return out;
}

}  // namespace

Shapes load_shapes(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw HarnessError("shapes: cannot open '" + path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    const json::Value doc = json::parse(ss.str(), path);
    Shapes s = default_shapes();
    ObjectReader r(doc, "$");
    const std::string schema = r.string("schema", "");
    if (schema != "moesim-shapes/1")
        ObjectReader::fail("$.schema", "must be \"moesim-shapes/1\" (got '" + schema + "')");
    s.name = r.string("name", path);
    s.description = r.string("description", "");
    if (const auto* m = r.get("model")) {
        s.dims = parse_model_dims(*m, "$.model");
        s.model = *m;
    }
    if (const auto* a = r.array("gemm")) {
        s.gemm.clear();
        for (std::size_t i = 0; i < a->as_array().size(); ++i)
            s.gemm.push_back(parse_gemm(a->as_array()[i], "$.gemm[" + std::to_string(i) + "]"));
    }
    if (const auto* g = r.get("grouped_gemm")) parse_grouped(*g, s.grouped, "$.grouped_gemm");
    if (const auto* b = r.get("bucketed_allreduce")) {
        ObjectReader br(*b, "$.bucketed_allreduce");
        s.buckets.cap_bytes = br.integer("cap_bytes", 0, s.buckets.cap_bytes, false);
        if (const auto* a = br.array("bucket_bytes")) s.buckets.bucket_bytes = parse_sizes(a, br.sub("bucket_bytes"));
        br.finish();
    }
    if (const auto* g = r.get("allgather")) {
        ObjectReader gr(*g, "$.allgather");
        s.allgather_flat_bytes = gr.integer("flat_bytes", 2, s.allgather_flat_bytes, false);
        s.assumed_group_size = gr.integer("assumed_group_size", 1, s.assumed_group_size, false);
        if (const auto* a = gr.array("fsdp_units")) {
            s.fsdp_units.clear();
            for (std::size_t i = 0; i < a->as_array().size(); ++i) {
                ObjectReader u(a->as_array()[i], gr.sub("fsdp_units") + "[" + std::to_string(i) + "]");
                s.fsdp_units.push_back({u.string("name", ""), u.integer("bytes", 2, 0, true)});
                u.finish();
            }
        }
        gr.finish();
    }
    if (const auto* a = r.get("alltoall")) {
        ObjectReader ar(*a, "$.alltoall");
        auto& c = s.alltoall;
        c.rows_per_rank = ar.integer("rows_per_rank", 1, c.rows_per_rank, false);
        c.d = ar.integer("d", 1, c.d, false);
        c.experts = ar.integer("experts", 1, c.experts, false);
        c.top_k = ar.integer("top_k", 1, c.top_k, false);
        c.seed = static_cast<std::uint64_t>(ar.integer("seed", 0, static_cast<std::int64_t>(c.seed), false));
        if (const auto* z = ar.array("zipf_s")) c.zipf_s = parse_doubles(z, ar.sub("zipf_s"));
        ar.finish();
    }
    if (const auto* i = r.get("interference")) {
        ObjectReader ir(*i, "$.interference");
        auto& c = s.interference;
        if (const auto* g = ir.get("gemm")) c.gemm = parse_gemm(*g, ir.sub("gemm"));
        c.allreduce_bytes = ir.integer("allreduce_bytes", 4, c.allreduce_bytes, false);
        c.alltoall_rows_per_rank = ir.integer("alltoall_rows_per_rank", 1, c.alltoall_rows_per_rank, false);
        ir.finish();
    }
    r.finish();
    return s;
}

json::Value shapes_to_json(const Shapes& s) {
    using json::Value;
    Value doc = Value::object();
    doc.set("schema", "moesim-shapes/1");
    doc.set("name", s.name);
    doc.set("description", s.description);
    doc.set("model", s.model.is_null() ? Value::object() : s.model);
    Value gemms = Value::array();
    for (const auto& g : s.gemm) {
        Value o = Value::object();
        o.set("name", g.name);
        o.set("m", g.m);
        o.set("n", g.n);
        o.set("k", g.k);
        o.set("layout", layout_name(g.layout));
        o.set("count", g.count);
        gemms.push_back(o);
    }
    doc.set("gemm", gemms);
    Value gg = Value::object();
    gg.set("tokens", s.grouped.tokens);
    gg.set("experts", s.grouped.experts);
    gg.set("top_k", s.grouped.top_k);
    gg.set("seed", s.grouped.seed);
    gg.set("zipf_s", Value::array_of(s.grouped.zipf_s));
    Value ggl = Value::array();
    for (const auto& g : s.grouped.gemms) {
        Value o = Value::object();
        o.set("name", g.name);
        o.set("m", g.rows_dim == 'm' ? Value("rows") : Value(g.m));
        o.set("n", g.n);
        o.set("k", g.rows_dim == 'k' ? Value("rows") : Value(g.k));
        o.set("layout", layout_name(g.layout));
        ggl.push_back(o);
    }
    gg.set("gemms", ggl);
    doc.set("grouped_gemm", gg);
    Value b = Value::object();
    b.set("cap_bytes", s.buckets.cap_bytes);
    b.set("bucket_bytes", Value::array_of(s.buckets.bucket_bytes));
    doc.set("bucketed_allreduce", b);
    Value ag = Value::object();
    ag.set("flat_bytes", s.allgather_flat_bytes);
    ag.set("assumed_group_size", s.assumed_group_size);
    Value units = Value::array();
    for (const auto& u : s.fsdp_units) {
        Value o = Value::object();
        o.set("name", u.name);
        o.set("bytes", u.bytes);
        units.push_back(o);
    }
    ag.set("fsdp_units", units);
    doc.set("allgather", ag);
    Value a2a = Value::object();
    a2a.set("rows_per_rank", s.alltoall.rows_per_rank);
    a2a.set("d", s.alltoall.d);
    a2a.set("experts", s.alltoall.experts);
    a2a.set("top_k", s.alltoall.top_k);
    a2a.set("seed", s.alltoall.seed);
    a2a.set("zipf_s", Value::array_of(s.alltoall.zipf_s));
    doc.set("alltoall", a2a);
    Value itf = Value::object();
    Value ig = Value::object();
    ig.set("name", s.interference.gemm.name);
    ig.set("m", s.interference.gemm.m);
    ig.set("n", s.interference.gemm.n);
    ig.set("k", s.interference.gemm.k);
    ig.set("layout", layout_name(s.interference.gemm.layout));
    itf.set("gemm", ig);
    itf.set("allreduce_bytes", s.interference.allreduce_bytes);
    itf.set("alltoall_rows_per_rank", s.interference.alltoall_rows_per_rank);
    doc.set("interference", itf);
    return doc;
}

}  // namespace moesim::cal
