// The rewrite of a kernel body into regions (cpu_regions.h): each region a
// loop over the group's threads, the values that live across regions in the
// per-thread frame, SIMD-group calls as deposits and exchanges, following
// the plan that plan_regions made (msl/cpu_regions.cpp).
#include <algorithm>
#include <map>
#include <set>

#include "msl/builtins.h"
#include "msl/cpu_regions.h"
#include "msl/cpu_regions_syntax.h"
#include "msl/cpu_uniform_loops.h"
#include "msl/token_rules.h"
#include "msl/writer.h"

namespace alloy::msl {
namespace {

using namespace regions;
using Kind = BodyStmt::Kind;
using Out = std::vector<std::optional<std::string>>;

std::string text(const std::vector<Token>& t, const Out& out, std::size_t b, std::size_t e) {
  std::string s;
  for (std::size_t k = b; k < e; ++k) {
    if (!s.empty()) s += ' ';
    s += written(t, out, k);
  }
  return s;
}

class Splitter {
 public:
  Splitter(const RegionsPlan& plan, const std::vector<Token>& t, Out& out) : plan_(plan), t_(t), out_(out) {
    // Each thread's ids (and its bounds check, which names it) in each region.
    if (plan.bounds_check)
      ids_ += "::alloy_msl::BoundsCheck alloy_bc = alloy_bc_group; "
              "alloy_bc.thread = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid, alloy_lid); ";
    for (const std::string& v : plan.thread_values) ids_ += v;
    // A rows kernel's row and column: in a region, what region_for_rows
    // passes; in a condition's lambda, divided for.
    if (plan.rows) {
      const std::string names = "[[maybe_unused]] const auto alloy_row = alloy_rc.row; "
                                "[[maybe_unused]] const auto alloy_col = alloy_rc.col; ";
      region_ids_ = ids_ + names;
      ids_ += "[[maybe_unused]] const auto alloy_rc = ::alloy_msl::cpu::region_row_column<" + plan.rows->index_type +
              ">(alloy_g, alloy_tid, alloy_lid, " + plan.rows->divisor + "); " + names;
    } else {
      region_ids_ = ids_;
    }
  }

  void run() {
    std::string prologue;
    const std::string types = deduced_types();
    // A rows kernel's divisions become its row and column (where nothing
    // else rewrote their tokens: the others still divide).
    if (plan_.rows)
      for (const auto* uses : {&plan_.rows->quotients, &plan_.rows->remainders})
        for (std::size_t k : *uses)
          if (!out_[k] && !out_[k + 1] && !out_[k + 2]) {
            out_[k] = uses == &plan_.rows->quotients ? "alloy_row" : "alloy_col";
            out_[k + 1] = out_[k + 2] = "";
          }
    for (const HoistedVariable& h : plan_.hoisted) {
      const std::string name = t_[h.name].text, at = "alloy_fv." + h.storage + "[alloy_tid]";
      std::string type;
      // The array is assigned: a `const` of the value goes, one of what a
      // pointer points to stays.
      for (std::size_t k = h.type_begin; k < h.type_end; ++k) {
        bool pointee = false;
        for (std::size_t j = k + 1; j < h.type_end; ++j) pointee = pointee || t_[j].is_punct("*");
        if (t_[k].is_ident("const") && !pointee) continue;
        if (!type.empty()) type += ' ';
        type += cur(k);
      }
      if (h.deduced) type = "::alloy_msl::cpu::region_value_t<decltype(alloy_types_t::m_" + h.storage + ")>";
      if (h.constructed) out_[h.end] = "= " + type + " " + cur(h.end);  // `T x(a)`: x = T(a)
      std::string dims = text(t_, out_, h.name + 1, h.end);
      prologue += type + " " + h.storage + "[::alloy_msl::cpu::kRegionMaxThreads]" + dims + "; ";
      // Each region works on its thread's values in locals of the same
      // names (registers, free of aliasing), loaded at its start and stored
      // at its end; an array is reached in place.
      const bool array = h.end > h.name + 1;
      vars_[h.storage] = {array ? "auto& " + name + " = " + at + "; " : type + " " + name + " = " + at + "; ",
                          array ? "" : at + " = " + name + "; "};
    }
    // A parameter the body changes: each thread's copy, from the parameter.
    std::string copies, param_types;  // (a member may not name the parameter it is named after: a type first)
    for (const std::string& p : plan_.copied_params) {
      param_types += "typedef __typeof__(" + p + ") alloy_param_t_" + p + "; ";
      prologue += "alloy_param_t_" + p + " " + p + "[::alloy_msl::cpu::kRegionMaxThreads]; ";
      copies += "for (unsigned alloy_t = 0; alloy_t < alloy_g.count; ++alloy_t) alloy_fv." + p + "[alloy_t] = " + p + "; ";
      vars_[p] = {"auto " + p + " = alloy_fv." + p + "[alloy_tid]; ", "alloy_fv." + p + "[alloy_tid] = " + p + "; "};
      copied_.insert(p);
    }
    // The operands of SIMD-group calls go to arrays of the frame too
    // (region_deposit), so a region's loop stores to one object it can tell
    // apart from the rest.
    if (has_simd_statements(plan_.body)) prologue += "::alloy_msl::cpu::RegionDeposits alloy_deposits; ";
    // One block for them all, held by the group's state (no thread_local in
    // the loops: each access would look the thread's storage up).
    if (!prologue.empty())
      prologue = param_types + types + "struct alloy_frame_t { " + prologue +
                 "}; alloy_frame_t* alloy_fvp = static_cast<alloy_frame_t*>(::alloy_msl::cpu::region_frame(alloy_g, "
                 "sizeof(alloy_frame_t))); if (!alloy_fvp) return; alloy_frame_t& __restrict__ alloy_fv = *alloy_fvp; " +
                 copies;
    // The uniform declarations, evaluated once for the group before it
    // (after its attributes, which they may read), their statements gone
    // from their places.
    // (Each under a `#line` of its own: a compiler's message about it names
    // the user's line.)
    std::string uniform;
    for (const BodyStmt& s : plan_.body) {
      if (!plan_.uniform_declarations.count(s.begin)) continue;
      uniform += Writer::line_marker(t_[s.begin].line) + text(t_, out_, s.begin, s.end);
      for (std::size_t k = s.begin; k < s.end; ++k) out_[k] = "";
    }
    if (!uniform.empty()) {
      std::string group;
      for (const std::string& v : plan_.group_values) group += v;
      uniform = group + uniform + Writer::line_marker_back();
    }
    if (!prologue.empty() || !uniform.empty()) prologue = moved_constants() + uniform + prologue;
    // A hoisted declaration becomes an assignment to the region's local (or
    // nothing); an array's initialiser fills a temporary copied into it.
    for (const HoistedVariable& h : plan_.hoisted) {
      if (h.array_initialised) {
        const std::string name = t_[h.name].text, temp = "alloy_init_" + name;
        std::size_t end = h.end;
        for (int depth = 0; end < t_.size() && !(depth == 0 && t_[end].is_punct(";")); ++end) {
          if (opens_bracket(t_[end])) ++depth;
          if (closes_bracket(t_[end])) --depth;
        }
        out_[h.type_begin] = "{ " + cur(h.type_begin);
        out_[h.name] = temp;
        out_[end] = "; __builtin_memcpy(&" + name + ", &" + temp + ", sizeof(" + temp + ")); }";
        continue;
      }
      if (h.type_end == h.name)  // (a later declarator keeps the `,` before it)
        for (std::size_t k = h.type_begin; k < h.name; ++k) out_[k] = "";
      if (h.separator) out_[h.separator] = "";
      if (!h.initialised)
        for (std::size_t k = h.name; k < h.end; ++k) out_[k] = "";
      else
        for (std::size_t k = h.name + 1; k < h.end; ++k) out_[k] = "";
    }
    // A program's entry: the group replaces its attribute parameters.
    for (auto [b, e] : plan_.dropped)
      for (std::size_t k = b; k < e; ++k) out_[k] = "";
    if (plan_.params_close)
      out_[plan_.params_close] = std::string(plan_.other_params ? ", " : "") +
                                 "::alloy_msl::cpu::GroupThreads& alloy_g" + cur(plan_.params_close);
    // The frame goes at plan_.frame_at, after the body's leading constants
    // and threadgroup storage (an array's extent may name such a constant:
    // `float v[R]`); at the end when every statement is one of those.
    prologue_ = prologue;
    eager_conditions();
    list(plan_.body);
    pending_ += prologue_;
    std::string tail = pending_ + (open_ ? close_text("") : "");
    if (plan_.end == plan_.begin || tail.empty()) return;
    // After the body's last line, which may be a preprocessor line (`#endif`).
    const std::size_t last = plan_.end - 1;
    out_[last] = cur(last) + (t_[last].kind == TokenKind::Directive ? "\n" : " ") + tail;
  }

 private:
  std::string cur(std::size_t k) const { return out_[k] ? *out_[k] : t_[k].text; }

  // `if (iy >= 0 && iy <= H - 1 && ...)`, the tests of a region's threads:
  // with `&` in place of `&&` (where eager_and_operators allows it) a test
  // is one branch, not a chain, and g++ unswitches the region's loop on the
  // ones its row shares (cpu_flags) instead of keeping the loop scalar.
  void eager_conditions() {
    for (std::size_t k = plan_.begin; k + 1 < plan_.end; ++k) {
      if (!t_[k].is_ident("if") || !t_[k + 1].is_punct("(")) continue;
      const std::size_t close = matching_paren(t_, k + 1);
      if (close >= plan_.end) continue;
      bool rewritten = false;  // by an earlier step (a row's division): left as it is
      for (std::size_t j = k + 2; j < close; ++j) rewritten = rewritten || out_[j].has_value();
      if (rewritten) continue;
      for (std::size_t j : eager_and_operators(t_, k + 1, close, plan_.opaque_macros)) out_[j] = "&";
    }
  }

  static std::string deposit_slot(unsigned slot) { return "alloy_fv.alloy_deposits.slot[" + std::to_string(slot) + "]"; }
  // Whether a statement (at any depth) calls SIMD-group functions as
  // simd_statements rewrites them: the frame then holds their deposits.
  bool has_simd_statements(const std::vector<BodyStmt>& stmts) const {
    for (const BodyStmt& s : stmts) {
      if (s.kind == Kind::Simple && !simd_calls(t_, s).empty()) return true;
      if (has_simd_statements(s.kids)) return true;
    }
    return false;
  }

  // The types of the values declared `auto` that live across regions
  // (HoistedVariable::deduced): a lambda, never called, repeats the
  // declarations they depend on after the thread's attributes, as a region
  // would, and a struct of its members gives each one's type as
  // alloy_types_t::m_<name>. (Read before the regions rewrite the tokens.)
  std::string deduced_types() const {
    std::string decls, members;
    for (const TypeDeclaration& d : plan_.type_declarations) {
      if (d.uses_auto) {
        decls += text(t_, out_, d.type_begin, d.end) + "; ";
        continue;
      }
      decls += text(t_, out_, d.type_begin, d.type_end) + " " + text(t_, out_, d.name, d.after) + " {}; ";
    }
    for (const HoistedVariable& h : plan_.hoisted)
      if (h.deduced) members += "decltype(" + t_[h.name].text + ") m_" + h.storage + "; ";
    if (members.empty()) return "";
    return "[[maybe_unused]] auto alloy_types_fn = [&](unsigned long alloy_tid, ::metal::uint3 alloy_lid) { " + ids_ +
           decls + "struct alloy_types_r { " + members +
           "}; return static_cast<alloy_types_r*>(nullptr); }; typedef ::alloy_msl::cpu::region_pointee_t<decltype("
           "alloy_types_fn(0ul, ::metal::uint3{}))> alloy_types_t; ";
  }

  // RegionsPlan::moved_constants' text, taken from their places.
  std::string moved_constants() {
    std::string moved;
    for (auto [b, e] : plan_.moved_constants) {
      moved += text(t_, out_, b, e) + " ";
      for (std::size_t k = b; k < e; ++k) out_[k] = "";
    }
    return moved;
  }

  // The hoisted names tokens [b, e) use; those the tokens may change also
  // go to region_written_ (a region stores back only those).
  // (Keys: the frame's array a use refers to, RegionsPlan::hoisted_uses;
  // a copied parameter's name.)
  void uses(std::size_t b, std::size_t e, std::set<std::string>& names) {
    for (std::size_t k = b; k < e; ++k) {
      if (t_[k].kind != TokenKind::Identifier || is_member_access(t_, k) || (k > 0 && t_[k - 1].is_punct("::")))
        continue;
      std::string key;
      if (auto at = plan_.hoisted_uses.find(k); at != plan_.hoisted_uses.end()) key = at->second;
      else if (copied_.count(t_[k].text)) key = t_[k].text;
      else continue;
      names.insert(key);
      if (may_change(k, b)) region_written_.insert(key);
    }
  }
  // Whether the use of a hoisted name at token k (its statement starting at
  // or after `first`) may change its value: assigned, incremented, its
  // address or a member or element taken, or an argument of a call (which
  // may take it by reference; a functional cast to a scalar or vector type
  // does not). Conservative: any doubt counts as a change. (A macro body
  // that names a value living across regions keeps the kernel off regions:
  // plan_regions.)
  bool may_change(std::size_t k, std::size_t first) const {
    static const std::set<std::string> changes = {"=",  "+=", "-=", "*=", "/=",  "%=",  "&=", "|=",
                                                  "^=", "<<=", ">>=", "++", "--", ".", "->", "["};
    if (k + 1 < t_.size() && t_[k + 1].kind == TokenKind::Punct && changes.count(t_[k + 1].text)) return true;
    if (k > 0 && (t_[k - 1].is_punct("++") || t_[k - 1].is_punct("--") || t_[k - 1].is_punct("&"))) return true;
    int depth = 0;
    for (std::size_t j = k; j-- > first;) {
      if (t_[j].is_punct(")") || t_[j].is_punct("]")) ++depth;
      if (!(t_[j].is_punct("(") || t_[j].is_punct("["))) continue;
      if (depth > 0) {
        --depth;
        continue;
      }
      if (t_[j].is_punct("[")) continue;  // an index: read
      // An enclosing `(`: a call unless what precedes it is a keyword, an
      // operator or a type name (a cast).
      if (j == 0) return false;
      const Token& before = t_[j - 1];
      if (before.is_punct(">") || before.is_punct(")") || before.is_punct("]")) return true;
      if (before.kind != TokenKind::Identifier) continue;
      static const std::set<std::string> not_calls = {"if", "while", "for", "switch", "return", "sizeof"};
      if (not_calls.count(before.text) || is_value_type_name(before.text)) continue;
      return true;
    }
    return false;
  }
  static bool is_value_type_name(const std::string& name) {
    return find_scalar_type(name) || is_vector_type_name(name) || name == "double";
  }
  std::string loads(const std::set<std::string>& names) const {
    std::string s;
    for (const std::string& n : names) s += vars_.at(n).first;
    return s;
  }
  std::string stores(const std::set<std::string>& names) const {
    std::string s;
    for (const std::string& n : names) s += vars_.at(n).second;
    return s;
  }
  // The loads are known when the region closes: a marker stands for them.
  std::string marker() const { return "\x01" + std::to_string(label_) + "\x01"; }
  std::string open_text() {
    label_ = ++labels_;
    region_names_.clear();
    region_written_.clear();
    // The region is a lambda that region_for inlines into its loops over the
    // group's threads; a `return` in it jumps to its end.
    if (plan_.rows)
      return "::alloy_msl::cpu::region_for_rows<" + plan_.rows->index_type + ">(alloy_g, " + plan_.rows->divisor +
             ", [&](unsigned long alloy_tid, ::metal::uint3 alloy_lid, auto alloy_rc) __attribute__((always_inline)) "
             "{ " + region_ids_ + marker() + "{ ";
    return "::alloy_msl::cpu::region_for(alloy_g, [&](unsigned long alloy_tid, ::metal::uint3 alloy_lid) "
           "__attribute__((always_inline)) { " + region_ids_ + marker() + "{ ";
  }
  std::string close_text(const std::string& deposits) {
    const std::string m = marker(), in = loads(region_names_);
    bool placed = false;
    if (std::size_t at = pending_.find(m); at != std::string::npos) {
      pending_.replace(at, m.size(), in);
      placed = true;
    }
    for (std::size_t k = plan_.begin; k < plan_.end && !placed; ++k)
      if (out_[k])
        if (std::size_t at = out_[k]->find(m); at != std::string::npos) {
          out_[k]->replace(at, m.size(), in);
          placed = true;
        }
    std::set<std::string> written;
    for (const std::string& n : region_names_)
      if (region_written_.count(n)) written.insert(n);
    return " } " + deposits + "alloy_next_" + std::to_string(label_) + ": ; " + stores(written) + "}); ";
  }
  void open() {
    if (!open_) pending_ += open_text();
    open_ = true;
  }
  void close(const std::string& deposits = "") {
    if (open_) pending_ += close_text(deposits);
    open_ = false;
  }
  // Text waiting for the next token that can carry it (not a directive).
  void flush(std::size_t k) {
    if (pending_.empty()) return;
    out_[k] = pending_ + cur(k);
    pending_.clear();
  }
  void returns(std::size_t b, std::size_t e) {
    for (std::size_t k = b; k + 1 < e; ++k)
      if (t_[k].is_ident("return") && t_[k + 1].is_punct(";")) {
        out_[k] = "{ ::alloy_msl::cpu::region_return(alloy_g, alloy_tid); goto alloy_next_" + std::to_string(label_) + "; }";
        out_[k + 1] = "";
      }
  }

  void list(const std::vector<BodyStmt>& stmts) {
    for (std::size_t i = 0; i < stmts.size(); ++i) {
      const BodyStmt& s = stmts[i];
      if (s.begin == plan_.frame_at) {
        pending_ += prologue_;
        prologue_.clear();
      }
      if (plan_.uniform_declarations.count(s.begin)) continue;  // (moved to the prologue)
      if (s.kind == Kind::Directive) {
        // Stays where it is. A condition's lines stay inside one region
        // (Planner::check), opened before its `#if` (a line of its own).
        if (is_conditional_directive(t_[s.begin].text)) {
          open();
          out_[s.begin] = pending_ + "\n" + cur(s.begin);
          pending_.clear();
        }
        continue;
      }
      if (!has_sync(t_, s.begin, s.end)) {
        if (group_declaration(t_, s)) {
          close();  // shared by the group: declared once, at its scope
        } else {
          open();
          returns(s.begin, s.end);
          uses(s.begin, s.end, region_names_);
        }
        flush(s.begin);
        continue;
      }
      if (s.kind == Kind::Simple && is_barrier_statement(t_, s)) {
        close();
        for (std::size_t k = s.begin; k < s.end; ++k) out_[k] = "";
        continue;
      }
      if (s.kind == Kind::Simple) {
        const auto batch = plan_.simd_batches.find(s.begin);
        const std::size_t n = batch == plan_.simd_batches.end() ? 1 : batch->second;
        simd_statements(stmts, i, n);
        i += n - 1;
        continue;
      }
      if (s.kind == Kind::Block) {
        close();
        flush(s.begin);
        list(s.kids);
        close();
        out_[s.end - 1] = pending_ + cur(s.end - 1);
        pending_.clear();
        continue;
      }
      loop(s);
    }
  }

  // Statements stmts[i, i + n) share one exchange (simd_batch_length): the
  // region before deposits every call's arguments, in order; the next reads
  // the results and runs the statements.
  void simd_statements(const std::vector<BodyStmt>& stmts, std::size_t i, std::size_t n) {
    std::vector<std::pair<std::size_t, std::size_t>> calls;
    for (std::size_t j = i; j < i + n; ++j)
      for (auto call : simd_calls(t_, stmts[j])) calls.push_back(call);
    // Consecutive exchanges take turns with the slots: the loop that reads
    // one's results deposits the next one's values.
    const unsigned first = (statements_++ % 2) * kCallsPerStatement;
    std::string deposits;
    open();
    for (std::size_t j = 0; j < calls.size(); ++j) {
      deposits += "::alloy_msl::cpu::region_deposit(" + deposit_slot(first + j) + ", alloy_tid, " +
                  text(t_, out_, calls[j].first, calls[j].second + 1) + "); ";
      uses(calls[j].first, calls[j].second + 1, region_names_);
    }
    close(deposits);
    pending_ += "::alloy_msl::cpu::region_exchange(alloy_g, " + std::to_string(first) + ", " +
                std::to_string(calls.size()) + "); ";
    open();
    for (std::size_t j = 0; j < calls.size(); ++j) {
      auto [call, c] = calls[j];
      out_[call] = "::alloy_msl::cpu::region_result(alloy_g, " + std::to_string(first + j) + ", " +
                   deposit_slot(first + j) + ", alloy_tid, " + cur(call);
      out_[c] = cur(c) + ")";
    }
    for (std::size_t j = i; j < i + n; ++j) uses(stmts[j].begin, stmts[j].end, region_names_);
    flush(stmts[i].begin);
  }

  // A branch's (or a loop body's) regions are written; returns the text
  // that ends its last region.
  std::string branch_regions(const BodyStmt& body) {
    if (body.kind == Kind::Block) {
      list(body.kids);
    } else {
      std::vector<BodyStmt> one(1, body);
      list(one);
    }
    close();
    std::string before = pending_;
    pending_.clear();
    return before;
  }
  // The loop's header gives way to `head` and its body's regions are
  // written; returns the text that ends the body's last region.
  std::string loop_body_regions(const BodyStmt& s, const std::string& head) {
    out_[s.begin] = head;
    for (std::size_t k = s.begin + 1; k <= s.close; ++k) out_[k] = "";
    return branch_regions(s.kids[0]);
  }
  // The branch's last token then carries `before` and `tail`.
  void end_branch(const BodyStmt& body, const std::string& before, const std::string& tail) {
    const std::size_t last = body.end - 1;
    out_[last] = body.kind == Kind::Block ? before + cur(last) + " " + tail : cur(last) + " " + before + tail;
  }
  void end_loop(const BodyStmt& s, const std::string& before, const std::string& tail) {
    end_branch(s.kids[0], before, tail);
  }

  // A branch every thread takes the same way (plan.uniform_ifs): `{ if
  // (cond) {`, the first branch's regions, `} else {`, the other's, `} }`.
  void uniform_if(const BodyStmt& s) {
    close();
    std::string group;  // the group's own attributes, which the condition may read
    for (const std::string& v : plan_.group_values) group += v;
    out_[s.begin] = pending_ + "{ " + group + "if (" + text(t_, out_, s.open + 1, s.close) + ") { ";
    pending_.clear();
    for (std::size_t k = s.begin + 1; k <= s.close; ++k) out_[k] = "";
    const std::string then_end = branch_regions(s.kids[0]);
    if (s.kids.size() == 1) {
      end_branch(s.kids[0], then_end, "} } ");
      return;
    }
    // (Before the `else` branch's first region opens, which its first token carries.)
    end_branch(s.kids[0], then_end, "} else { ");
    for (std::size_t k = s.kids[0].end; k < s.kids[1].begin; ++k) out_[k] = "";  // `else`
    end_branch(s.kids[1], branch_regions(s.kids[1]), "} } ");
  }

  // A uniform loop (plan.uniform_loops): `{ init; for (; cond; inc) {`, its
  // body's regions, then `} }`.
  void uniform_loop(const BodyStmt& s) {
    std::size_t s1 = 0, s2 = 0;
    for_clauses(t_, s, s1, s2);
    std::string group;  // the group's own attributes, which the header may read
    for (const std::string& v : plan_.group_values) group += v;
    const std::string head = pending_ + "{ " + group + text(t_, out_, s.open + 1, s1) + "; for (; " +
                             text(t_, out_, s1 + 1, s2) + "; " + text(t_, out_, s2 + 1, s.close) + ") { ";
    pending_.clear();
    end_loop(s, loop_body_regions(s, head), "} } ");
  }

  // A branch threads may take differently (plan.branching_ifs):
  // `if (region_branch(cond)) {`, the first branch's regions, `} if
  // (region_else()) {`, the other's, `} region_rejoin();`.
  void branching_if(const BodyStmt& s) {
    close();
    const std::string depth = std::to_string(depth_++) + "u";
    std::set<std::string> in_cond;
    uses(s.open + 1, s.close, in_cond);
    out_[s.begin] = pending_ +
                    "if (::alloy_msl::cpu::region_branch(alloy_g, [&](unsigned long alloy_tid, ::metal::uint3 "
                    "alloy_lid) -> bool { " +
                    ids_ + loads(in_cond) + "return bool(" + text(t_, out_, s.open + 1, s.close) + "); }, " + depth +
                    ")) { ";
    pending_.clear();
    for (std::size_t k = s.begin + 1; k <= s.close; ++k) out_[k] = "";
    const std::string rejoin = "} ::alloy_msl::cpu::region_rejoin(alloy_g, " + depth + "); ";
    const std::string then_end = branch_regions(s.kids[0]);
    if (s.kids.size() == 1) {
      end_branch(s.kids[0], then_end, rejoin);
    } else {
      end_branch(s.kids[0], then_end, "} if (::alloy_msl::cpu::region_else(alloy_g, " + depth + ")) { ");
      for (std::size_t k = s.kids[0].end; k < s.kids[1].begin; ++k) out_[k] = "";  // `else`
      end_branch(s.kids[1], branch_regions(s.kids[1]), rejoin);
    }
    --depth_;
  }

  void loop(const BodyStmt& s) {
    if (plan_.uniform_ifs.count(s.begin)) {
      uniform_if(s);
      return;
    }
    if (plan_.branching_ifs.count(s.begin)) {
      branching_if(s);
      return;
    }
    close();
    if (plan_.uniform_loops.count(s.begin)) {
      uniform_loop(s);
      return;
    }
    std::string init, cond, inc;
    std::size_t s1 = 0, s2 = 0;
    if (s.kind == Kind::For) {
      for_clauses(t_, s, s1, s2);
      init = text(t_, out_, s.open + 1, s1);
      cond = text(t_, out_, s1 + 1, s2);
      inc = text(t_, out_, s2 + 1, s.close);
    } else {
      cond = text(t_, out_, s.open + 1, s.close);
    }
    if (!init.empty()) {
      open();
      uses(s.open + 1, s1, region_names_);
      pending_ += init + "; ";
      close();
    }
    const unsigned depth = depth_++;
    std::set<std::string> in_cond;
    if (s.kind == Kind::For) uses(s1 + 1, s2, in_cond);
    else uses(s.open + 1, s.close, in_cond);
    pending_ += "while (::alloy_msl::cpu::region_loop(alloy_g, [&](unsigned long alloy_tid, ::metal::uint3 alloy_lid) -> bool { " + ids_ +
                loads(in_cond) + "return bool(" + (cond.empty() ? std::string("true") : cond) + "); }, " +
                std::to_string(depth) + "u)) { ";
    const std::string head = pending_;
    pending_.clear();
    const std::string before = loop_body_regions(s, head);
    if (!inc.empty()) {
      open();
      uses(s2 + 1, s.close, region_names_);
      pending_ += inc + "; ";
      close();
    }
    pending_ += "} ";
    --depth_;
    end_loop(s, before, pending_);
    pending_.clear();
  }

  const RegionsPlan& plan_;
  const std::vector<Token>& t_;
  Out& out_;
  std::string ids_, pending_;
  std::string region_ids_;  // ids_ for region_for's lambdas (a rows kernel's row and column from the loop)
  std::map<std::string, std::pair<std::string, std::string>> vars_;  // by key (uses()): (load, store) text
  std::set<std::string> copied_;                                      // RegionsPlan::copied_params
  std::set<std::string> region_names_;                                // the open region's hoisted names
  std::set<std::string> region_written_;                              // those it may change
  unsigned depth_ = 0;       // group-level loops entered
  unsigned statements_ = 0;  // SIMD-group exchanges so far
  bool open_ = false;
  std::string prologue_;  // the per-thread frame, until the first statement that needs it
  int label_ = 0, labels_ = 0;
};

}  // namespace

void split_regions(const RegionsPlan& plan, const std::vector<Token>& toks, Out& out) {
  Splitter(plan, toks, out).run();
}

}  // namespace alloy::msl
