"""Comparisons of role configurations (lab.rollouts.comparisons): the launch form on the evaluations page and a
comparison's page (each variant minus the base, paired on task and seed, per-role statistics; polled while it runs)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from lab.console.views.evaluations import evaluation_list_context
from lab.console.views.launch_forms import launch_project, refused_fields, seeds_parse
from lab.errors import DomainError
from lab.pages import console_view, page, visible_projects
from lab.rollouts.comparisons import comparison_launch, comparison_plan, comparison_summary
from lab.rollouts.selectors import comparison_get

COMPARISON_FIELDS = ("project", "base", "variants", "task_set", "seeds")


def variants_parse(raw: str) -> list[str]:
    """Agent names, one per line or separated by commas."""
    return [name.strip() for line in raw.splitlines() for name in line.split(",") if name.strip()]


@console_view
def comparison_detail(request: HttpRequest, pk: int) -> HttpResponse:
    comparison = comparison_get(projects=visible_projects(request), pk=pk)
    summary = comparison_summary(comparison=comparison)
    context = {"comparison": comparison, "summary": summary, "base": summary["variants"][0], "variants": summary["variants"][1:]}
    return page(request, "console/comparison.html", context, fragment="console/_comparison_body.html")


@require_POST
@console_view
def comparison_new(request: HttpRequest) -> HttpResponse:
    post = request.POST
    try:
        project = launch_project(request, "run evaluations")
        if post.get("preview"):  # the count of jobs first, nothing launched
            variants = variants_parse(post.get("variants", ""))
            plan = comparison_plan(
                agents=1 + len(variants), task_set=post.get("task_set", "").strip(), seeds=seeds_parse(post.get("seeds", ""))
            )
            context = evaluation_list_context(request, form={}, errors={})
            context.update(comparison_form=post, comparison_errors={}, comparison_preview=f"This comparison launches {plan['text']}.")
            return page(request, "console/evaluations.html", context)
        comparison = comparison_launch(
            project=project,
            base=post.get("base", "").strip(),
            variants=variants_parse(post.get("variants", "")),
            task_set=post.get("task_set", "").strip(),
            seeds=seeds_parse(post.get("seeds", "")),
            user=request.user,
        )
    except DomainError as exc:
        errors = {"variants": exc.message} if exc.code == "unknown_agent" else refused_fields(exc, COMPARISON_FIELDS)
        context = evaluation_list_context(request, form={}, errors={})
        context.update(comparison_form=post, comparison_errors=errors)
        return page(request, "console/evaluations.html", context, status=400)
    return redirect("comparison", pk=comparison.pk)
