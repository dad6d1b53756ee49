from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from lab.projects.login import AdminLoginForm, LoginView

admin.site.login_form = AdminLoginForm  # the admin's sign-in is rate-limited like the console's

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its script from a URL of its own: the Content-Security-Policy refuses inline scripts.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api/swagger_ui.html"), name="api-docs"),
    path("api/v1/", include("lab.api_urls")),
    path("", include("lab.console.urls")),
]
