// tokaudit's driver for llama.cpp's own chat-template engine (common/jinja and common/chat.cpp).
//
// Built by tokaudit/template/llamacpp_build.py against the sources of the pinned llama-cpp-python sdist
// (nothing of llama.cpp is in tokaudit's repository): this file only calls llama.cpp's API.
//
// One process serves many renders. Each request on stdin is a 4-byte little-endian length and a JSON object:
//   {"op": "render", "template": T, "context": {...}}       llama.cpp's engine on a plain context
//   {"op": "apply", "template": T, "request": {...},         what llama-server makes of an OpenAI request:
//    "bos_token": B, "eos_token": E, "server": {...}}        its message parsing, normalisation and workarounds
//   common keys: "now" (seconds since the epoch, the clock the template sees), "max_output" (bytes), "seconds"
// Each answer on stdout is a 4-byte length and a JSON header, then a 4-byte length and the text's bytes:
//   {"ok": true, ...} or {"ok": false, "kind": "syntax|raise|error|request|budget", "error": "..."}
// A render that runs past "seconds" ends the process (SIGALRM); the caller sees the pipe close.

#include "chat.h"
#include "jinja/caps.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"
#include "jinja/runtime.h"
#include "json.h"

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

using json = common_json;

// ---- the clock a template sees: strftime_now and llama.cpp's date context read it -------------------------

static std::atomic<long long> g_now{-1};

extern "C" int clock_gettime(clockid_t clock, struct timespec * ts) {
    long long now = g_now.load();
    if (now >= 0 && clock == CLOCK_REALTIME) {
        ts->tv_sec = (time_t) now;
        ts->tv_nsec = 0;
        return 0;
    }
    return (int) syscall(SYS_clock_gettime, clock, ts);
}

extern "C" time_t time(time_t * out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out) {
        *out = ts.tv_sec;
    }
    return ts.tv_sec;
}

// ---- what the engine build needs from outside common/: no model is ever loaded here ---------------------------

extern "C" void ggml_abort(const char * file, int line, const char * fmt, ...) {
    char buf[400];
    va_list args;
    va_start(args, fmt);
    vsnprintf(buf, sizeof buf, fmt, args);
    va_end(args);
    throw std::runtime_error(std::string(buf) + " (" + file + ":" + std::to_string(line) + ")");
}

[[noreturn]] static void no_model(const char * what) {
    throw std::runtime_error(std::string(what) + " needs a loaded model, which tokaudit's template engine never has");
}

extern "C" {
const char * llama_model_chat_template(const struct llama_model *, const char *) { no_model("llama_model_chat_template"); }
const struct llama_vocab * llama_model_get_vocab(const struct llama_model *) { no_model("llama_model_get_vocab"); }
llama_token llama_vocab_bos(const struct llama_vocab *) { no_model("llama_vocab_bos"); }
llama_token llama_vocab_eos(const struct llama_vocab *) { no_model("llama_vocab_eos"); }
bool llama_vocab_get_add_bos(const struct llama_vocab *) { no_model("llama_vocab_get_add_bos"); }
bool llama_vocab_get_add_eos(const struct llama_vocab *) { no_model("llama_vocab_get_add_eos"); }
int32_t llama_tokenize(const struct llama_vocab *, const char *, int32_t, llama_token *, int32_t, bool, bool) {
    no_model("llama_tokenize");
}
int32_t llama_token_to_piece(const struct llama_vocab *, llama_token, char *, int32_t, int32_t, bool) {
    no_model("llama_token_to_piece");
}
int32_t llama_chat_apply_template(const char *, const struct llama_chat_message *, size_t, bool, char *, int32_t) {
    throw std::runtime_error("llama.cpp's legacy (non-Jinja) template path is not part of this engine");
}
}

// ---- framing ----------------------------------------------------------------------------------------------

static bool read_exact(void * buf, size_t n) {
    char * p = (char *) buf;
    while (n > 0) {
        ssize_t got = read(0, p, n);
        if (got <= 0) {
            return false;
        }
        p += got;
        n -= (size_t) got;
    }
    return true;
}

static void write_exact(const void * buf, size_t n) {
    const char * p = (const char *) buf;
    while (n > 0) {
        ssize_t put = write(1, p, n);
        if (put <= 0) {
            _exit(0);
        }
        p += put;
        n -= (size_t) put;
    }
}

static void write_block(const std::string & data) {
    uint32_t n = (uint32_t) data.size();
    unsigned char len[4] = {(unsigned char) n, (unsigned char) (n >> 8), (unsigned char) (n >> 16), (unsigned char) (n >> 24)};
    write_exact(len, 4);
    write_exact(data.data(), data.size());
}

static void answer(json header, const std::string & text) {
    write_block(header.dump_safe());
    write_block(text);
}

static void fail(const std::string & kind, const std::string & message) {
    json header = json::object();
    header["ok"] = false;
    header["kind"] = kind;
    header["error"] = message;
    answer(header, "");
}

// ---- the two operations ---------------------------------------------------------------------------------------

// a template that does not lex or parse: kind "syntax" whatever the exception's type
struct syntax_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

static std::string render_context(const std::string & source, const json & context) {
    jinja::lexer lexer;
    jinja::lexer_result tokens;
    jinja::program program;
    try {
        tokens = lexer.tokenize(source);
        program = jinja::parse_from_tokens(tokens);
    } catch (const std::exception & e) {
        throw syntax_error(e.what());
    }
    jinja::context ctx(tokens.source);
    jinja::global_from_json(ctx, context, /* mark_input= */ false);
    jinja::runtime runtime(ctx);
    return jinja::runtime::gather_string_parts(runtime.execute(program))->as_string().str();
}

// The request as llama-server's /v1/chat/completions turns it into common_chat_templates_inputs
// (tools/server/server-common.cpp, oaicompat_chat_params_parse), with the server's options in "server".
struct request_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// json_value() of llama-server: a missing key or one of another type gives the default
template <typename T> static T value_or(const json & obj, const std::string & key, const T & fallback) {
    try {
        return obj.contains(key) && !obj.at(key).is_null() ? obj.at(key).get<T>() : fallback;
    } catch (const std::exception &) {
        return fallback;
    }
}

static common_chat_templates_inputs parse_request(const common_chat_templates * tmpls, const json & req,
                                                  const json & server, long long now) {
    if (!req.contains("messages") || !req.at("messages").is_array()) {
        throw std::invalid_argument("'messages' is required and must be an array");
    }
    json messages = req.at("messages");
    for (const auto & msg : messages) {
        std::string role = value_or(msg, "role", std::string());
        if (role != "assistant" && !msg.contains("content")) {
            throw std::invalid_argument("All non-assistant messages must contain 'content'");
        }
        if (role == "assistant" && !msg.contains("content") && !msg.contains("tool_calls")) {
            throw std::invalid_argument("Assistant message must contain either 'content' or 'tool_calls'!");
        }
    }
    auto caps = common_chat_templates_get_caps(tmpls);
    common_chat_templates_inputs inputs;
    inputs.use_jinja = true;
    inputs.messages = common_chat_msgs_parse_oaicompat(messages);
    inputs.tools = common_chat_tools_parse_oaicompat(value_or(req, "tools", json()));
    inputs.tool_choice = common_chat_tool_choice_parse_oaicompat(value_or(req, "tool_choice", std::string("auto")));
    inputs.parallel_tool_calls = value_or(req, "parallel_tool_calls", (bool) caps["supports_parallel_tool_calls"]);
    inputs.add_generation_prompt = value_or(req, "add_generation_prompt", true);
    if (req.contains("continue_final_message")) {
        inputs.continue_final_message = common_chat_continuation_parse(req.at("continue_final_message"));
    }
    if (inputs.continue_final_message == COMMON_CHAT_CONTINUATION_NONE && value_or(server, "prefill_assistant", true) &&
        !inputs.messages.empty() && inputs.messages.back().role == "assistant") {
        if (inputs.messages.size() >= 2 && inputs.messages[inputs.messages.size() - 2].role == "assistant") {
            throw std::invalid_argument("Cannot have 2 or more assistant messages at the end of the list.");
        }
        inputs.continue_final_message = COMMON_CHAT_CONTINUATION_AUTO;
        inputs.add_generation_prompt = false;
    }
    if (inputs.continue_final_message != COMMON_CHAT_CONTINUATION_NONE && inputs.add_generation_prompt) {
        throw std::invalid_argument("Cannot set both add_generation_prompt and continue_final_message to true.");
    }
    if (inputs.continue_final_message != COMMON_CHAT_CONTINUATION_NONE && !inputs.messages.empty() &&
        inputs.messages.back().role == "assistant" && !inputs.messages.back().tool_calls.empty()) {
        throw std::invalid_argument("Cannot continue an assistant message that contains tool calls.");
    }
    inputs.reasoning_format = common_reasoning_format_from_name(
        value_or(req, "reasoning_format", value_or(server, "reasoning_format", std::string("deepseek"))));
    inputs.enable_thinking = value_or(server, "enable_thinking", true);
    json kwargs = value_or(server, "chat_template_kwargs", json::object());
    for (const auto & [key, value] : kwargs.items()) {
        inputs.chat_template_kwargs[key] = value.dump();
    }
    // a named copy: items() of the temporary value_or returns would outlive it
    json request_kwargs = value_or(req, "chat_template_kwargs", json::object());
    for (const auto & [key, value] : request_kwargs.items()) {
        inputs.chat_template_kwargs[key] = value.dump();
    }
    auto thinking = inputs.chat_template_kwargs.find("enable_thinking");
    if (thinking != inputs.chat_template_kwargs.end()) {
        if (thinking->second == "true") {
            inputs.enable_thinking = true;
        } else if (thinking->second == "false") {
            inputs.enable_thinking = false;
        } else if (!thinking->second.empty() && thinking->second[0] == '"') {
            throw std::invalid_argument("invalid type for \"enable_thinking\" (expected boolean, got string)");
        }
    }
    if (req.contains("reasoning_effort")) {
        std::string effort = value_or(req, "reasoning_effort", std::string());
        if (effort == "none") {
            inputs.enable_thinking = false;
            inputs.chat_template_kwargs.erase("reasoning_effort");
        } else if (!effort.empty()) {
            inputs.chat_template_kwargs["reasoning_effort"] = json(effort).dump();
        }
    }
    if (now >= 0) {
        inputs.now = std::chrono::system_clock::from_time_t((time_t) now);
    }
    return inputs;
}

static common_chat_params apply_request(const std::string & source, const json & req, const json & server,
                                        const std::string & bos, const std::string & eos, long long now) {
    common_chat_templates_ptr tmpls;
    try {
        tmpls = common_chat_templates_init(nullptr, source, bos, eos);
    } catch (const std::exception & e) {
        throw syntax_error(e.what());
    }
    common_chat_templates_inputs inputs;
    try {
        inputs = parse_request(tmpls.get(), req, server, now);
    } catch (const std::exception & e) {
        throw request_error(e.what());
    }
    common_chat_params params = common_chat_templates_apply(tmpls.get(), inputs);
    // llama-server's vocabulary options (tokenizer.ggml.add_bos_token / add_eos_token): the token is added when
    // tokenizing, so a template that writes it loses it here
    if (value_or(server, "add_bos", false) && !bos.empty() && params.prompt.rfind(bos, 0) == 0) {
        params.prompt = params.prompt.substr(bos.size());
    }
    if (value_or(server, "add_eos", false) && !eos.empty() && params.prompt.size() >= eos.size() &&
        params.prompt.compare(params.prompt.size() - eos.size(), eos.size(), eos) == 0) {
        params.prompt = params.prompt.substr(0, params.prompt.size() - eos.size());
    }
    return params;
}

static std::string last_line(const std::string & text) {
    size_t end = text.find_last_not_of("\n ");
    if (end == std::string::npos) {
        return text;
    }
    size_t start = text.rfind('\n', end);
    return text.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
}

static std::string where(const std::string & text) {
    size_t at = text.find("While executing ");
    if (at == std::string::npos) {
        return "";
    }
    size_t end = text.find(" in source:", at);
    return text.substr(at + 16, end == std::string::npos ? std::string::npos : end - at - 16);
}

static void serve(const json & req) {
    std::string op = req.value("op", std::string());
    std::string source = req.value("template", std::string());
    long long now = req.contains("now") && !req.at("now").is_null() ? req.at("now").get<long long>() : -1;
    g_now.store(now);
    size_t max_output = (size_t) req.value("max_output", (long long) 1 << 20);
    unsigned seconds = (unsigned) req.value("seconds", (long long) 10);
    json header = json::object();
    std::string text;
    alarm(seconds);
    try {
        if (op == "render") {
            text = render_context(source, req.value("context", json::object()));
        } else if (op == "apply") {
            json server = req.value("server", json::object());
            common_chat_params params;
            try {
                params = apply_request(source, req.value("request", json::object()), server,
                                       req.value("bos_token", std::string()), req.value("eos_token", std::string()), now);
            } catch (const request_error & e) {
                alarm(0);
                fail("request", e.what());
                return;
            }
            text = params.prompt;
            header["format"] = common_chat_format_name(params.format);
            header["generation_prompt"] = params.generation_prompt;
            header["supports_thinking"] = params.supports_thinking;
        } else {
            alarm(0);
            fail("error", "unknown op '" + op + "'");
            return;
        }
    } catch (const syntax_error & e) {
        alarm(0);
        fail("syntax", last_line(e.what()));
        return;
    } catch (const std::bad_alloc &) {
        alarm(0);
        fail("budget", "out of memory");
        return;
    } catch (const std::exception & e) {
        alarm(0);
        std::string message = e.what();
        std::string line = last_line(message);
        std::string at = where(message);
        const char * raised = "Error: Jinja Exception: ";
        if (line.find("std::bad_alloc") != std::string::npos) {
            fail("budget", "out of memory" + (at.empty() ? std::string() : " (" + at + ")"));
        } else if (line.rfind(raised, 0) == 0) {
            fail("raise", line.substr(strlen(raised)) + (at.empty() ? "" : " (" + at + ")"));
        } else {
            fail("error", (line.rfind("Error: ", 0) == 0 ? line.substr(7) : line) + (at.empty() ? "" : " (" + at + ")"));
        }
        return;
    }
    alarm(0);
    if (text.size() > max_output) {
        fail("budget", "the output exceeds " + std::to_string(max_output) + " bytes");
        return;
    }
    header["ok"] = true;
    answer(header, text);
}

int main(int argc, char ** argv) {
    // argv[1]: the address-space limit in bytes (0: none)
    if (argc > 1) {
        unsigned long long limit = strtoull(argv[1], nullptr, 10);
        if (limit > 0) {
            struct rlimit rl = {(rlim_t) limit, (rlim_t) limit};
            setrlimit(RLIMIT_AS, &rl);
        }
    }
    for (;;) {
        unsigned char len[4];
        if (!read_exact(len, 4)) {
            return 0;
        }
        uint32_t n = (uint32_t) len[0] | ((uint32_t) len[1] << 8) | ((uint32_t) len[2] << 16) | ((uint32_t) len[3] << 24);
        std::string body(n, '\0');
        if (!read_exact(&body[0], n)) {
            return 0;
        }
        json req;
        try {
            req = json::parse(body);
        } catch (const std::exception & e) {
            fail("error", std::string("bad request: ") + e.what());
            continue;
        }
        try {
            serve(req);
        } catch (const std::bad_alloc &) {
            alarm(0);
            fail("budget", "out of memory");
        } catch (const std::exception & e) {
            alarm(0);
            fail("error", e.what());
        }
    }
}
