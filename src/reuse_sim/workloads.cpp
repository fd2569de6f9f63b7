#include "reuse_sim/workloads.hpp"

#include <algorithm>

#include "base/errors.hpp"
#include "reuse_sim/recycled_ids.hpp"
#include "reuse_sim/rng.hpp"
#include "base/sizes.hpp"

namespace gpumem::reuse_sim {

namespace {

constexpr std::uint64_t KiB = 1024, MiB = KiB * 1024;

// Tag numbers: requesters (an output slot, a layer's activation...).
enum Tag : std::uint32_t {
    kInput = 0, kOutput, kWorkspace, kBoxes, kScores, kLabels, kCrop, kHidden, kLogits, kLoss, kGradAct, kAdamTmp,
    kAct = 100, kKv = 1100, kWeight = 2100, kGradWeight = 3100, kAdamM = 4100, kAdamV = 5100,
};

}  // namespace

// The events of one workload, a step at a time.
class detail::Generator {
public:
    explicit Generator(const WorkloadOptions& o) : o_(o), rng_(o.seed) {}
    virtual ~Generator() = default;

    bool next(Event& e) {
        while (pos_ == events_.size()) {
            events_.clear();
            pos_ = 0;
            if (step_ < o_.steps) {
                stream_ = o_.streams > 1 ? step_ % o_.streams : 0;
                step(step_);
                events_.push_back(Event{EventKind::sync, 0, 0, stream_, kNoTag, 0});
                ++step_;
            } else if (!finished_) {
                finished_ = true;
                finish();
                if (events_.empty()) return false;
            } else {
                return false;
            }
        }
        e = events_[pos_++];
        e.line = ++ordinal_;
        return true;
    }

protected:
    virtual void step(std::uint64_t index) = 0;
    virtual void finish() {}

    std::uint64_t alloc(std::uint64_t size, std::uint32_t tag) {
        const std::uint64_t id = ids_.take();
        events_.push_back(Event{EventKind::alloc, id, std::max<std::uint64_t>(size, 1), stream_, tag, 0});
        return id;
    }
    void free(std::uint64_t id) {
        events_.push_back(Event{EventKind::free, id, 0, stream_, kNoTag, 0});
        ids_.give_back(id);
    }

    // Activation bytes per sample of layer l: shrinking by stages, as in a CNN.
    std::uint64_t activation(std::uint32_t l) const {
        const std::uint32_t stage = o_.layers >= 4 ? l * 4 / o_.layers : 0;
        return std::max<std::uint64_t>(o_.sample_bytes >> stage, 512);
    }
    // One inference through the layers at batch size `batch`; returns nothing live.
    void forward(std::uint64_t batch) {
        std::uint64_t prev = alloc(batch * 602112, kInput);  // 3x224x224 fp32
        for (std::uint32_t l = 0; l < o_.layers; ++l) {
            const std::uint64_t out = alloc(batch * activation(l), kAct + l);
            if (l % 2 == 0) free(alloc(std::min<std::uint64_t>(32 * MiB, batch * o_.sample_bytes / 4 + 4 * KiB), kWorkspace));
            free(prev);
            prev = out;
        }
        const std::uint64_t logits = alloc(batch * 4000, kOutput);
        free(prev);
        free(logits);
    }

    const WorkloadOptions o_;
    Rng rng_;
    std::vector<Event> events_;
    std::size_t pos_ = 0;
    std::uint64_t step_ = 0, ordinal_ = 0, stream_ = 0;
    bool finished_ = false;
    RecycledIds<std::uint64_t> ids_{1};
};

namespace {

using detail::Generator;

class Inference final : public Generator {
public:
    using Generator::Generator;
    void step(std::uint64_t) override { forward(o_.batch_max); }
};

class Dynamic final : public Generator {
public:
    using Generator::Generator;
    void step(std::uint64_t index) override {
        if (index == 0 || rng_.chance(o_.change_rate)) batch_ = rng_.uniform(o_.batch_min, o_.batch_max);
        forward(batch_);
    }

private:
    std::uint64_t batch_ = 1;
};

class Detector final : public Generator {
public:
    using Generator::Generator;
    void step(std::uint64_t) override {
        forward(o_.batch_max);
        const std::uint64_t n = rng_.uniform(0, o_.max_detections);
        std::vector<std::uint64_t>& outs = outs_;
        outs.clear();
        outs.push_back(alloc(std::max<std::uint64_t>(n, 1) * 16, kBoxes));
        outs.push_back(alloc(std::max<std::uint64_t>(n, 1) * 4, kScores));
        outs.push_back(alloc(std::max<std::uint64_t>(n, 1) * 8, kLabels));
        for (std::uint64_t i = 0; i < (n + 7) / 8; ++i) outs.push_back(alloc(std::uint64_t{3} * 64 * 64 * 4, kCrop));
        for (std::uint64_t id : outs) free(id);
    }

private:
    std::vector<std::uint64_t> outs_;
};

class LlmDecode final : public Generator {
public:
    using Generator::Generator;
    void step(std::uint64_t) override {
        const std::uint64_t prompt = rng_.uniform(o_.prompt_min, o_.prompt_max);
        const std::uint64_t tokens = rng_.uniform(o_.tokens_min, o_.tokens_max);
        const std::uint64_t kvb = o_.kv_bytes_per_token;
        kv_.assign(o_.layers, 0);
        for (std::uint32_t l = 0; l < o_.layers; ++l) {  // prefill
            kv_[l] = alloc(prompt * kvb, kKv + l);
            free(alloc(prompt * kHiddenBytes, kHidden));
        }
        for (std::uint64_t t = 1; t <= tokens; ++t) {
            for (std::uint32_t l = 0; l < o_.layers; ++l) {
                // The cache grows by one token: a new buffer, then the old one goes (torch.cat).
                const std::uint64_t hidden = alloc(kHiddenBytes, kHidden);
                const std::uint64_t grown = alloc((prompt + t) * kvb, kKv + l);
                free(kv_[l]);
                kv_[l] = grown;
                free(hidden);
            }
            free(alloc(kVocabBytes, kLogits));
        }
        for (std::uint32_t l = 0; l < o_.layers; ++l) free(kv_[l]);  // the request ends: the cache resets
    }

private:
    static constexpr std::uint64_t kHiddenBytes = 8 * KiB;   // 4096 fp16
    static constexpr std::uint64_t kVocabBytes = 128000;     // 32000 fp32 logits
    std::vector<std::uint64_t> kv_;
};

class Training final : public Generator {
public:
    using Generator::Generator;
    void step(std::uint64_t index) override {
        const std::uint64_t batch = o_.batch_max;
        const std::uint32_t L = o_.layers;
        if (index == 0) {
            weights_.clear();
            for (std::uint32_t l = 0; l < L; ++l) weights_.push_back(alloc(weight_bytes(l), kWeight + l));
        }
        const std::uint64_t x = alloc(batch * 602112, kInput);
        acts_.assign(L, 0);
        for (std::uint32_t l = 0; l < L; ++l) {
            acts_[l] = alloc(batch * activation(l), kAct + l);
            free(alloc(std::min<std::uint64_t>(16 * MiB, batch * o_.sample_bytes / 8 + 4 * KiB), kWorkspace));
        }
        const std::uint64_t loss = alloc(4, kLoss);
        // Backward: gradients appear, activations go, in reverse order.
        grads_.assign(L, 0);
        std::uint64_t grad = alloc(batch * activation(L - 1), kGradAct);
        for (std::uint32_t l = L; l-- > 0;) {
            grads_[l] = alloc(weight_bytes(l), kGradWeight + l);
            const std::uint64_t next = alloc(l > 0 ? batch * activation(l - 1) : batch * 602112, kGradAct);
            free(acts_[l]);
            free(grad);
            grad = next;
        }
        free(grad);
        free(loss);
        free(x);
        // Optimizer: state allocated at the first step and kept, temporaries per layer.
        if (index == 0) {
            state_.clear();
            for (std::uint32_t l = 0; l < L; ++l) {
                state_.push_back(alloc(weight_bytes(l), kAdamM + l));
                state_.push_back(alloc(weight_bytes(l), kAdamV + l));
            }
        }
        for (std::uint32_t l = 0; l < L; ++l) free(alloc(weight_bytes(l), kAdamTmp));
        for (std::uint32_t l = 0; l < L; ++l) free(grads_[l]);  // zero_grad(set_to_none=True)
    }
    void finish() override {
        for (std::uint64_t id : state_) free(id);
        for (std::uint64_t id : weights_) free(id);
    }

private:
    static std::uint64_t weight_bytes(std::uint32_t l) { return (2 * MiB) << (l % 4); }
    std::vector<std::uint64_t> weights_, state_, acts_, grads_;
};

std::unique_ptr<Generator> create(const WorkloadOptions& o) { return kWorkloads.parse(o.name).make(o); }

class WorkloadSource final : public EventSource {
public:
    explicit WorkloadSource(const WorkloadOptions& o) : o_(o), generator_(create(o)) {}
    bool next(Event& e) override { return generator_->next(e); }
    std::string location(std::uint64_t line) const override {
        return "workload " + o_.name + ", event " + std::to_string(line);
    }
    std::string description() const override {
        std::string d = "workload " + o_.name + ", " + std::to_string(o_.steps) + " steps, seed " + std::to_string(o_.seed);
        const BatchUse batch = kWorkloads.parse(o_.name).batch;
        if (batch == BatchUse::range)
            d += ", batch " + std::to_string(o_.batch_min) + ".." + std::to_string(o_.batch_max) + ", change rate " +
                 format_decimal(o_.change_rate, 3);
        else if (batch == BatchUse::largest)
            d += ", batch " + std::to_string(o_.batch_max);
        if (o_.streams > 1) d += ", " + std::to_string(o_.streams) + " streams";
        return d;
    }
    std::string format() const override { return "generated"; }
    bool rewind() override {
        generator_ = create(o_);
        return true;
    }
    std::string tag_name(std::uint32_t tag) const override {
        static const char* const fixed[] = {"input", "output", "workspace", "boxes", "scores", "labels",
                                            "crop",  "hidden", "logits",    "loss",  "grad_act", "adam_tmp"};
        if (tag < sizeof fixed / sizeof fixed[0]) return fixed[tag];
        static const std::pair<std::uint32_t, const char*> layered[] = {
            {kAdamV, "adam_v"}, {kAdamM, "adam_m"}, {kGradWeight, "grad_w"}, {kWeight, "w"}, {kKv, "kv"}, {kAct, "act"}};
        for (const auto& [base, name] : layered)
            if (tag >= base) return name + std::to_string(tag - base);
        return "t" + std::to_string(tag);
    }

private:
    WorkloadOptions o_;
    std::unique_ptr<Generator> generator_;
};

template <typename G>
std::unique_ptr<Generator> make_generator(const WorkloadOptions& o) {
    return std::make_unique<G>(o);
}

constexpr Named<WorkloadSpec> kWorkloadRows[] = {
    {"inference", {make_generator<Inference>, BatchUse::largest}, "fixed-shape inference (video frames, online serving)"},
    {"dynamic", {make_generator<Dynamic>, BatchUse::range},
     "the same network with the batch size drawn from --batch MIN..MAX, changing with probability --change-rate"},
    {"detector", {make_generator<Detector>, BatchUse::largest},
     "a fixed backbone and 0..--max-detections detections per image"},
    {"llm-decode", {make_generator<LlmDecode>, BatchUse::none},
     "a KV cache per layer that grows by one token at a time and resets per request"},
    {"training", {make_generator<Training>, BatchUse::largest},
     "weights and optimizer state kept; activations freed in reverse order; gradients freed after each step"},
};

}  // namespace

const NameTable<WorkloadSpec> kWorkloads{"workload", kWorkloadRows, "workloads"};

void check_workload_options(const WorkloadOptions& o) {
    if (o.batch_min == 0 || o.batch_min > o.batch_max) throw UsageError("--batch: need 1 <= MIN <= MAX");
    if (o.layers == 0 || o.layers > 1000) throw UsageError("--layers must be 1..1000");
    if (!(o.change_rate >= 0 && o.change_rate <= 1)) throw UsageError("--change-rate must be within [0, 1]");
    if (o.prompt_min == 0 || o.prompt_min > o.prompt_max) throw UsageError("--prompt: need 1 <= MIN <= MAX");
    if (o.tokens_min == 0 || o.tokens_min > o.tokens_max) throw UsageError("--tokens: need 1 <= MIN <= MAX");
    if (o.streams == 0) throw UsageError("--streams must be at least 1");
    if (o.sample_bytes == 0) throw UsageError("--sample-bytes must be at least 1 byte");
    (void)kWorkloads.row(o.name);  // UsageError naming the workloads
}

std::unique_ptr<EventSource> make_workload(const WorkloadOptions& o) {
    check_workload_options(o);
    return std::make_unique<WorkloadSource>(o);
}

}  // namespace gpumem::reuse_sim
